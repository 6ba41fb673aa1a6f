package bwrap

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
)

// Outside is what the caller knows of the operator's session: its environment and the
// directories derived from it (XDG rules live in the CLI).
type Outside struct {
	Home, ConfigHome, DataHome, User string
	Environ                          []string
}

// Gather finds the facts Resolve needs for r. It is the only place the resolver's input
// is looked up on the host: the working directory, the password database, tools on PATH,
// mount sources and credential files.
func Gather(r Request, o Outside) (Facts, error) {
	f := Facts{
		Euid: os.Geteuid(), Home: o.Home, User: o.User,
		DataHome: o.DataHome, Environ: o.Environ,
		Tools: map[string]ToolFact{}, Mounts: map[string]MountFact{},
	}
	if o.Home == "" {
		return f, nil // Resolve refuses it, with the reason
	}
	wd, err := os.Getwd()
	if r.Persistent != nil {
		wd, err = r.Persistent.Workdir, nil // the box's, whatever the current one
	}
	if err != nil {
		return f, fmt.Errorf("working directory: %w", err)
	}
	// The real path: a symlink must not smuggle a bigger tree in under a harmless name.
	if f.Workdir, err = filepath.EvalSymlinks(wd); err != nil {
		return f, fmt.Errorf("working directory: %w", err)
	}
	f.Homes = []string{resolved(o.Home)}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		f.Homes = append(f.Homes, resolved(u.HomeDir))
	}
	for _, d := range []string{filepath.Join(o.ConfigHome, "box"), filepath.Join(o.DataHome, "box")} {
		f.BoxDirs = append(f.BoxDirs, resolved(d))
	}
	pathEnv := envMap(o.Environ)["PATH"]
	for _, name := range r.toolNames() {
		t, err := ResolveTool(name, pathEnv)
		f.Tools[name] = ToolFact{Tool: t, Err: err}
	}
	for _, m := range r.Profile.Mounts {
		src := ExpandHome(m.Path, o.Home)
		real, err := filepath.EvalSymlinks(src)
		f.Mounts[src] = MountFact{Real: real, Err: err}
	}
	if r.Profile.AuthPassthrough {
		for _, rel := range r.Template.AgentOf().CredentialPaths() {
			if p := filepath.Join(o.Home, rel); fileExists(p) {
				f.AuthFiles = append(f.AuthFiles, p)
			}
		}
	}
	return f, nil
}

// resolved is p with symlinks followed, or p itself when it cannot be resolved.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
