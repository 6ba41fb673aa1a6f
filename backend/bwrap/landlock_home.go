package bwrap

// The Landlock mode's home. Without a mount namespace the sandbox sees the instance
// directory at its real path, so its root (the trust record box-reach.json, the run lock,
// the set-aside copies) must be outside every rule: a sandbox that could write the record
// would name the reach the next, wider run is compared with. The mode grants the agent's
// state directory and a home of its own beneath the instance directory, nothing else of it.

import (
	"os"
	"path/filepath"
	"strings"
)

// LandlockHome is the Landlock mode's home, in the instance directory: HOME, with TMPDIR
// in it (tmp) and the state directory linked at its home-relative path. The trust rule
// sets it aside with the state (trust.go).
const LandlockHome = "home"

// ProtLandlockHome names the rule that keeps the instance directory's root out of the
// Landlock mode's grants (switched off only in a test build: the whole directory is
// granted, as before, so the drill can show the sandbox rewriting the trust record).
const ProtLandlockHome = "landlock-home"

// landlockHome is the mode's HOME for p.
func (p *Plan) landlockHome() string { return filepath.Join(p.Spec.InstanceDir, LandlockHome) }

// landlockGrants are the trees of the instance directory the mode's sandbox writes: the
// state directory and the mode's home, never the root.
func (p *Plan) landlockGrants() []string {
	if protectionOff(ProtLandlockHome) {
		return []string{p.Spec.InstanceDir}
	}
	grants := []string{p.landlockHome()}
	// A state directory that is the root or outside it (no template names one) is not granted.
	if rel, err := filepath.Rel(p.Spec.InstanceDir, filepath.Join(p.Spec.InstanceDir, p.Spec.StateDir)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		grants = append([]string{filepath.Join(p.Spec.InstanceDir, rel)}, grants...)
	}
	return grants
}

// landlockHomeVar is v (a value under the real home) as the mode sees it: the state
// directory's paths in the instance directory's, the rest in the mode's home.
func (p *Plan) landlockHomeVar(v string) string {
	rel, err := filepath.Rel(p.Spec.Home, v)
	if err != nil {
		return v
	}
	if hasPrefixPath(rel, p.Spec.StateDir) {
		return filepath.Join(p.Spec.InstanceDir, rel)
	}
	if rel == "." {
		return p.landlockHome()
	}
	return filepath.Join(p.landlockHome(), rel)
}

func hasPrefixPath(p, dir string) bool {
	return p == dir || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

// prepareLandlockHome makes the mode's home and its tmp, and links the state directory
// at its home-relative path (relative, so a set-aside copy points at its own state).
// What the sandbox left in the home stays: it is the sandbox's, and set aside with the
// state when a wider run comes.
func (p *Plan) prepareLandlockHome() error {
	home := p.landlockHome()
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o700); err != nil {
		return err
	}
	link := filepath.Join(home, p.Spec.StateDir)
	if _, err := os.Lstat(link); err == nil || !os.IsNotExist(err) {
		return nil // the sandbox's to keep or break; box never reads through it
	}
	// The directories between the home and the link are the sandbox's too: one it made a
	// symlink would have box plant the link wherever it points (a directory of your real
	// home), so box makes them itself, never through a link, and leaves a broken one be.
	dir := home
	rel, err := filepath.Rel(home, filepath.Dir(link))
	if err != nil {
		return err
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "." {
			continue
		}
		dir = filepath.Join(dir, c)
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return err
		}
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			return nil // the sandbox's to keep or break; box never writes through it
		}
	}
	target, err := filepath.Rel(filepath.Dir(link), filepath.Join(p.Spec.InstanceDir, p.Spec.StateDir))
	if err != nil {
		return err
	}
	return os.Symlink(target, link)
}
