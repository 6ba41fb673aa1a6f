package bwrap

// The project's Nix dev shell inside the sandbox: evaluated on the host, before launch,
// by the host's Nix (nix print-dev-env --json: Nix 2.8 or later), cached, and handed to
// the sandbox as variables (each audited like any other) and a PATH. Its shellHook runs
// inside, never on the host: print-dev-env builds the shell's environment without
// running it, and the sandbox's command is started through a shell that evaluates it.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/userenv"
	"github.com/heavy-duty/box/profiles"
)

// DevShell is a dev shell's environment, as evaluated on the host.
type DevShell struct {
	Installable string            `json:"installable"`
	Vars        map[string]string `json:"vars"` // exported variables, less devShellDropped
	Path        []string          `json:"path"` // the shell's PATH, first on the sandbox's
	Key         string            `json:"key"`
	Cached      bool              `json:"-"` // this launch did not evaluate
}

// ErrDevShell is what every dev shell failure wraps (errors.Is).
var ErrDevShell = errors.New("dev shell")

// DevShellError: the dev shell could not be evaluated. Nix is Nix's own message; NoFlake
// says the directory holds no flake.nix at all.
type DevShellError struct {
	Installable string
	Nix         string
	NoFlake     bool
}

func (e *DevShellError) Error() string {
	if e.NoFlake {
		return fmt.Sprintf("devshell %s: the project has no dev shell (no flake.nix there)", e.Installable)
	}
	return fmt.Sprintf("devshell %s: nix print-dev-env failed: %s", e.Installable, e.Nix)
}

func (e *DevShellError) Unwrap() error { return ErrDevShell }

// Hint says the way on (field review, session 18: --devshell where there is no flake had
// none).
func (e *DevShellError) Hint() string {
	if e.NoFlake {
		return "run box in the directory of a flake with a devShell, or without --devshell (and devshell in the profile)"
	}
	return "nix print-dev-env " + e.Installable + " on the host shows the same error"
}

// devShellDropped are the variables a dev shell's environment holds that are the build's
// plumbing or the host's, never the shell's to set (nix develop's own list, plus box's):
// box sets HOME, USER, PATH and the rest itself.
// A switch, not a map built at every start of box (issue 24).
func devShellDropped(name string) bool {
	switch name {
	case "BASHOPTS", "HOME", "NIX_BUILD_TOP", "NIX_ENFORCE_PURITY", "NIX_LOG_FD",
		"NIX_REMOTE", "PPID", "SHELL", "SHELLOPTS", "SSL_CERT_FILE",
		"NIX_SSL_CERT_FILE", "TEMP", "TEMPDIR", "TERM", "TMP", "TMPDIR",
		"TZ", "UID", "PATH", "USER", "LOGNAME", "BOX_SANDBOX",
		"out", "outputs", "OLDPWD", "PWD", "SHLVL", "_", "builder", "NIX_BUILD_CORES", "NIX_STORE":
		return true
	}
	return false
}

// nixSystem is Nix's name of this machine's system.
func nixSystem() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "riscv64": "riscv64"}[runtime.GOARCH]
	return arch + "-linux"
}

// DevShellInstallable is what a devshell setting names: "true" is the working
// directory's flake's devShells.<system>.default; anything else is an installable, a
// relative path read from the working directory.
func DevShellInstallable(setting, workdir string) string {
	if setting == "true" {
		return "path:" + workdir + "#devShells." + nixSystem() + ".default"
	}
	return setting
}

// devShellCacheDir is the user's cache directory for dev shells.
func devShellCacheDir(home string, environ []string) string {
	return filepath.Join(BoxCacheDir(home, environ), "devshell")
}

// BoxCacheDir is box's cache directory, $XDG_CACHE_HOME/box (else ~/.cache/box). It is
// box's own state like its data and configuration directories (Facts.BoxDirs): a dev
// shell's cached variables and shellHook are read back from it without evaluating
// anything, so a sandbox that could write it would plant what the next --devshell run
// of any project starts with (hostile review, session 16).
func BoxCacheDir(home string, environ []string) string {
	env := envMap(environ)
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return env[k]
	}
	if c := userenv.CacheHome(getenv); c != "" { // the XDG rule, in one place
		return filepath.Join(c, "box")
	}
	return filepath.Join(home, ".cache", "box")
}

// devShellKey keys the cache: the installable as named, where it was named from, and,
// for a local flake, its flake.lock and every .nix file (so a changed lock or shell
// definition evaluates again). A remote installable is keyed by its name alone.
func devShellKey(installable, workdir string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", installable, workdir, nixSystem())
	dir, local := profiles.InstallablePath(installable)
	if local {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(workdir, dir)
		}
		if _, err := os.Stat(filepath.Join(dir, "flake.nix")); err != nil {
			return "", &DevShellError{Installable: installable, NoFlake: true}
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: Nix will say so if it matters
			}
			if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && (strings.HasSuffix(p, ".nix") || d.Name() == "flake.lock") {
				b, err := os.ReadFile(p)
				if err != nil {
					return nil
				}
				fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
				h.Write(b)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ProtDevShell refuses to evaluate a dev shell whose flake holds .nix files the sandbox
// can write (switched off only in a test build, so the drill can show the breach).
const ProtDevShell = "devshell-writable"

// DevShellGuard is what the sandbox can write (the working directory, box's own
// directories) and, of that, what it cannot (the protected set's read-only paths).
type DevShellGuard struct {
	Writable, ReadOnly []string
}

// DevShellWritableError: the flake a dev shell is evaluated from holds files the host's
// Nix evaluates (.nix files, flake.lock) that the sandbox can write, or that box could
// not list. A narrower run may have planted code there: a nix/shell.nix the protected
// flake.nix imports, fetching file:///home/you/.ssh/id_ed25519 into the world-readable
// store (hostile review, session 11). Nothing was evaluated.
type DevShellWritableError struct {
	Installable string
	Files       []string // relative to Workdir where they lie in it
}

func (e *DevShellWritableError) Error() string {
	return fmt.Sprintf("devshell %s: the host's Nix would evaluate, as you, %s, which the sandbox can write (a run may have changed it)", e.Installable, strings.Join(e.Files, ", "))
}

func (e *DevShellWritableError) Unwrap() error { return ErrDevShell }

// exposed lists what in the flake directory dir the host's Nix may evaluate (.nix files
// and flake.lock, whatever their type) and the sandbox can write, and every directory
// there box cannot list (an unknown: what it holds is not known to be safe).
func (g DevShellGuard) exposed(dir, workdir string) []string {
	in := func(p string, dirs []string) bool {
		for _, d := range dirs {
			if within(p, d) {
				return true
			}
		}
		return false
	}
	writable := func(p string) bool { return in(p, g.Writable) && !in(p, g.ReadOnly) }
	var out []string
	name := func(p, why string) {
		if r, err := filepath.Rel(workdir, p); err == nil && within(p, workdir) {
			p = r
		}
		out = append(out, p+why)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if writable(p) {
				name(p, " (cannot be listed)")
			}
			return nil
		}
		if d.IsDir() {
			if in(p, g.ReadOnly) {
				return filepath.SkipDir
			}
			// Outside what the sandbox writes, and holding none of it.
			if !in(p, g.Writable) && !slices.ContainsFunc(g.Writable, func(w string) bool { return within(w, p) }) {
				return filepath.SkipDir
			}
			return nil
		}
		if (strings.HasSuffix(d.Name(), ".nix") || d.Name() == "flake.lock") && writable(p) {
			name(p, "")
		}
		return nil
	})
	return out
}

// EvalDevShell returns the dev shell installable names, from the cache when its key is
// unchanged and its store paths are still there, else evaluated by nix on the host (in
// workdir, with the operator's environment: it is the host's Nix, as the operator). A
// local flake is evaluated only when guard finds nothing in it the sandbox can write.
func EvalDevShell(ctx context.Context, nix, installable, workdir, home string, environ []string, guard DevShellGuard) (*DevShell, error) {
	key, err := devShellKey(installable, workdir)
	if err != nil {
		return nil, err
	}
	cache := filepath.Join(devShellCacheDir(home, environ), key+".json")
	if b, err := os.ReadFile(cache); err == nil {
		var d DevShell
		if json.Unmarshal(b, &d) == nil && d.Key == key && d.Installable == installable && pathsExist(d.Path) {
			d.Cached = true
			return &d, nil
		}
	}
	// Before Nix reads anything: what it would evaluate must be the operator's.
	if dir, local := profiles.InstallablePath(installable); local && !protectionOff(ProtDevShell) {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(workdir, dir)
		}
		if files := guard.exposed(resolved(dir), workdir); len(files) > 0 {
			return nil, errs.WithHint(&DevShellWritableError{Installable: installable, Files: files},
				"review them, then keep them read-only in every profile you run here: protect_add = [\""+files[0]+"\"] (or their directory; a default.toml of your own overrides the built-in default); or keep the flake outside the working directory")
		}
	}
	if nix == "" {
		return nil, errs.WithHint(&DevShellError{Installable: installable, Nix: "nix is not installed on the host"}, "install Nix (2.8 or later) on the host, or drop devshell")
	}
	cmd := exec.CommandContext(ctx, nix, "--extra-experimental-features", "nix-command flakes", "print-dev-env", "--json", "--", installable)
	cmd.Dir, cmd.Env = workdir, environ
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, errs.WithHint(&DevShellError{Installable: installable, Nix: msg},
			"check it on the host: nix print-dev-env '"+installable+"'")
	}
	d, err := parseDevEnv(out)
	if err != nil {
		return nil, &DevShellError{Installable: installable, Nix: "reading print-dev-env's JSON: " + err.Error()}
	}
	d.Installable, d.Key = installable, key
	if b, err := json.Marshal(d); err == nil {
		// A cache that cannot be written costs the next launch an evaluation, nothing more.
		if os.MkdirAll(filepath.Dir(cache), 0o700) == nil {
			tmp := cache + ".tmp"
			if os.WriteFile(tmp, b, 0o600) == nil {
				os.Rename(tmp, cache)
			}
		}
	}
	return d, nil
}

// parseDevEnv reads nix print-dev-env --json: the exported variables with string values
// become the sandbox's (less devShellDropped), PATH apart.
func parseDevEnv(b []byte) (*DevShell, error) {
	var env struct {
		Variables map[string]struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"variables"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, err
	}
	d := &DevShell{Vars: map[string]string{}}
	for name, v := range env.Variables {
		if v.Type != "exported" {
			continue
		}
		var s string
		if json.Unmarshal(v.Value, &s) != nil {
			continue
		}
		switch {
		case name == "PATH":
			for _, p := range strings.Split(s, ":") {
				if p != "" && !strings.HasPrefix(p, "/homeless-shelter") && p != "/path-not-set" {
					d.Path = append(d.Path, p)
				}
			}
		case !devShellDropped(name) && !strings.ContainsRune(name, '='):
			d.Vars[name] = s
		}
	}
	return d, nil
}

func pathsExist(ps []string) bool {
	for _, p := range ps {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// devShellPATH puts the dev shell's PATH before the sandbox's.
func (d *DevShell) devShellPATH(path string) string {
	if d == nil || len(d.Path) == 0 {
		return path
	}
	return strings.Join(d.Path, ":") + ":" + path
}

// merge adds the dev shell's variables to those entering the sandbox, as origin
// "devshell" (so the audit checks them); box's own win, and the shell's win over the
// host's passed ones.
func (d *DevShell) merge(vars []envaudit.Var) []envaudit.Var {
	if d == nil {
		return vars
	}
	byName := map[string]envaudit.Var{}
	for _, v := range vars {
		byName[v.Name] = v
	}
	for k, v := range d.Vars {
		if old, ok := byName[k]; ok && old.Origin == "box" {
			continue
		}
		byName[k] = envaudit.Var{Name: k, Value: v, Origin: "devshell"}
	}
	out := make([]envaudit.Var, 0, len(byName))
	for _, v := range byName {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// devShellHookScript runs the shell's shellHook, inside, then the command.
const devShellHookScript = `eval "${shellHook:-}"; exec "$@"`

// wrap starts command through bash running the shellHook first, when the shell has one.
func (d *DevShell) wrap(command []string) []string {
	if d == nil || d.Vars["shellHook"] == "" {
		return command
	}
	return append([]string{"bash", "-c", devShellHookScript, "box-devshell"}, command...)
}

// gatherDevShell evaluates the dev shell the request names (--devshell, else the
// profile's devshell), on the host, before anything is launched.
func gatherDevShell(r Request, o Outside, f *Facts) error {
	setting := r.DevShell
	if setting == "" {
		setting = string(r.Profile.DevShell)
	}
	if setting == "" {
		return nil
	}
	if err := profiles.ValidDevShell(setting); err != nil {
		return errs.Usage("name a dev shell: --devshell, --devshell=path:.#default", "%v", err)
	}
	if checkWorkdir(*f) != nil {
		return nil // Resolve refuses the launch: nothing is evaluated
	}
	// What the sandbox will be able to write, and what of it the protected set keeps
	// read-only (the set Resolve uses for the launch).
	pset, err := f.Built.set(f.Tree, protect.Options{Add: r.Profile.ProtectAdd, Drop: r.Profile.ProtectDrop})
	if err != nil {
		return fmt.Errorf("profile %q: %w", r.Profile.Name, err)
	}
	guard := DevShellGuard{Writable: append([]string{f.Workdir}, f.BoxDirs...), ReadOnly: pset.ReadOnly()}
	for _, m := range r.Profile.Mounts {
		if mf, ok := f.Mounts[ExpandHome(m.Path, f.Home)]; ok && m.RW() && mf.Err == nil {
			guard.Writable = append(guard.Writable, mf.Real) // the profile's read-write mounts
		}
	}
	nix, _ := exec.LookPath("nix")
	d, err := EvalDevShell(context.Background(), nix, DevShellInstallable(setting, f.Workdir), f.Workdir, o.Home, o.Environ, guard)
	if err != nil {
		return err
	}
	f.DevShell = d
	return nil
}

// noteDevShell tells the policy (SANDBOX.md) which dev shell the sandbox is in, and
// says aloud when it was evaluated from a directory the sandbox can write: its next
// evaluation, after the sandbox changed it, runs on the host's Nix as the operator.
func (p *Plan) noteDevShell(f Facts) {
	d := f.DevShell
	if d == nil {
		return
	}
	p.Policy.DevShell = d.Installable
	if dir, local := profiles.InstallablePath(d.Installable); local && !d.Cached {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(f.Workdir, dir)
		}
		if within(resolved(dir), f.Workdir) {
			p.warn("devshell %s: evaluated on the host by your Nix, from the working directory, which the sandbox can write; box evaluates it again whenever its flake.lock or .nix files change", d.Installable)
		}
	}
}
