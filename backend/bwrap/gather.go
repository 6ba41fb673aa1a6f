package bwrap

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"

	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"github.com/heavy-duty/box/backend/bwrap/nixpkg"
	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/phase"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/sys/unix"
)

// Outside is what the caller knows of the operator's session: its environment and the
// directories derived from it (XDG rules live in the CLI).
type Outside struct {
	Home, ConfigHome, DataHome, User string
	RuntimeDir                       string // $XDG_RUNTIME_DIR, "" when unset
	Environ                          []string
}

// Gather finds the facts Resolve needs for r. It is the only place the resolver's input
// is looked up on the host: the working directory, the password database, tools on PATH,
// mount sources, credential files and the system paths the argv binds.
func Gather(r Request, o Outside) (Facts, error) {
	f := Facts{
		Euid: os.Geteuid(), Egid: os.Getegid(), Home: o.Home, User: o.User,
		DataHome: o.DataHome, Environ: o.Environ, RuntimeDir: o.RuntimeDir, RunID: NewRunID(),
		Tools: map[string]ToolFact{}, Mounts: map[string]MountFact{}, Arch: seccomp.Native(),
	}
	phase.Mark("gather:start")
	if o.Home == "" {
		return f, nil // Resolve refuses it, with the reason
	}
	var err error
	if f.Workdir = r.Tree; f.Workdir == "" {
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
	}
	phase.Mark("gather:workdir")
	f.Homes = []string{resolved(o.Home)}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		f.Homes = append(f.Homes, resolved(u.HomeDir))
	}
	for _, d := range []string{filepath.Join(o.ConfigHome, "box"), filepath.Join(o.DataHome, "box"), BoxCacheDir(o.Home, o.Environ)} {
		f.BoxDirs = append(f.BoxDirs, resolved(d))
	}
	f.BoxData = resolved(filepath.Join(o.DataHome, "box"))
	pathEnv := envMap(o.Environ)["PATH"]
	for _, name := range r.toolNames() {
		t, from, err := resolveToolFrom(name, pathEnv)
		tf := ToolFact{Tool: t, Err: err, From: from}
		if err == nil {
			for _, h := range f.Homes {
				if within(t.Path, h) {
					tf.Script = isScript(t.Path) // read only for a tool under a home: a few bytes
					break
				}
			}
		}
		f.Tools[name] = tf
	}
	for _, m := range r.Profile.Mounts {
		src := ExpandHome(m.Path, o.Home)
		real, err := filepath.EvalSymlinks(src)
		mf := MountFact{Real: real, Err: err}
		if fi, serr := os.Stat(real); err == nil && serr == nil && !fi.IsDir() {
			mf.File = true
		}
		f.Mounts[src] = mf
	}
	phase.Mark("gather:tools")
	if f.MemTotal, err = HostMemory(); err != nil {
		return f, fmt.Errorf("limits: %w", err)
	}
	f.Cgroup = DetectCgroup(f.Euid)
	f.LandlockABI = LandlockABI()
	f.UnixNotify = UnixNotifySupport()
	if bin, err := exec.LookPath("bwrap"); err == nil {
		fi, err := os.Stat(bin)
		f.BwrapSetuid = err == nil && fi.Mode()&os.ModeSetuid != 0
	}
	var nproc unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &nproc) == nil && nproc.Cur != unix.RLIM_INFINITY {
		f.Nproc = nproc.Cur
	}
	var nofile unix.Rlimit // Go raised the soft limit to the hard one at start
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile) == nil && nofile.Max != unix.RLIM_INFINITY {
		f.Nofile = nofile.Max
	}
	if legacy := LegacyInstanceDir(o.DataHome, f.Workdir); fileExists(legacy) {
		f.LegacyInstance = legacy
	}
	phase.Mark("gather:kernel")
	// The protected set's scan, unless Resolve will refuse the working directory anyway
	// (a home directory is no tree to walk).
	if checkWorkdir(f) == nil {
		refuse := append([]string{}, f.BoxDirs...)
		for _, h := range f.Homes {
			for _, s := range policy.Secrets {
				for _, sp := range s.Paths {
					refuse = append(refuse, policy.Abs(h, sp))
				}
			}
		}
		opts := protect.Options{Add: r.Profile.ProtectAdd, Drop: r.Profile.ProtectDrop, Path: filepath.SplitList(pathEnv)}
		dirlist.DisableStamps = protectionOff(ProtListingStamps)
		protect.DisableDotDirs, protect.DisableMissingDirs = protectionOff(ProtHomeDotDirs), protectionOff(ProtHomeMissing)
		f.Tree = protect.ScanAfter(dirlist.Load(ListingsPath(o.DataHome, f.Workdir)), f.Workdir, f.Homes[0], opts, refuse)
		// The configs the sandbox can read, for their credentials (a bad option is
		// Resolve's refusal, from the same set).
		f.Built = buildSet(f.Tree, opts)
		if f.Built.Err == nil {
			f.GitConfigs = readGitConfigs(gitConfigFiles(f.Built.Set))
		}
		if f.GitConfigs == nil {
			f.GitConfigs = map[string]GitConfigRead{}
		}
		f.SystemGitConfigs = systemGitConfigs(envMap(o.Environ), f.GitConfigs)
		f.SystemSecrets = readSystemSecrets()
	}
	phase.Mark("gather:scan")
	if err := gatherDevShell(r, o, &f); err != nil { // devshell.go
		return f, err
	}
	if err := gatherNix(r, o, pathEnv, &f); err != nil {
		return f, err
	}
	if r.Profile.AuthPassthrough {
		for _, rel := range r.Template.AgentOf().CredentialPaths() {
			if p := filepath.Join(o.Home, rel); fileExists(p) {
				f.AuthFiles = append(f.AuthFiles, p)
			}
		}
	}
	phase.Mark("gather:nix")
	if r.Profile.PassGitIdentity() {
		f.Git = ReadGitIdentity(o.Environ)
	}
	f.GitSigns = ReadGitSigning(o.Environ)
	f.SSH = gatherSSH(r, o)
	f.TermInfo = readTermInfo(envMap(o.Environ), o.Home) // terminfo.go
	phase.Mark("gather:gitident")
	if f.Host, err = DetectHost(); err != nil {
		return f, err
	}
	phase.Mark("gather:host")
	return f, nil
}

// nixCommands are the Nix tools a minimal PATH keeps, when the host has them.
var nixCommands = []string{"nix", "nix-build", "nix-shell", "nix-store", "nix-instantiate", "nix-env", "nix-hash", "nix-prefetch-url", "nix-collect-garbage", "nix-channel", "nix-copy-closure", ","}

// gatherNix realises the profile's packages on the host (cached) and finds the Nix tools.
func gatherNix(r Request, o Outside, pathEnv string, f *Facts) error {
	if fi, err := os.Stat("/nix/store"); err == nil && fi.IsDir() {
		f.HostNixStore = true
	}
	nixBin := ""
	if t, err := ResolveTool("nix", pathEnv); err == nil {
		nixBin = t.Path
	}
	if r.Profile.Path == profiles.PathMinimal {
		for _, n := range nixCommands {
			if t, err := ResolveTool(n, pathEnv); err == nil {
				f.NixTools = append(f.NixTools, t)
			}
		}
	}
	if len(r.Profile.Packages) == 0 {
		return nil
	}
	// Before nix reads anything: a flake in a directory the sandbox can write would be
	// evaluated on the host, as the operator.
	for _, pk := range r.Profile.Packages {
		if dir, local := profiles.InstallablePath(pk); local {
			if err := refuseWritableFlake(pk, resolved(dir), append([]string{f.Workdir}, f.BoxDirs...)); err != nil {
				return err
			}
		}
	}
	rl := nixpkg.Realiser{Nix: nixBin, CacheDir: filepath.Join(o.DataHome, "box", "packages"), Environ: o.Environ}
	outs, _, err := rl.Realise(context.Background(), r.Profile.Packages)
	if err != nil {
		return err
	}
	f.PackageCommands = map[string]bool{}
	for _, out := range outs {
		bin := filepath.Join(out, "bin")
		ents, err := os.ReadDir(bin)
		if err != nil {
			continue
		}
		f.PackageBins = append(f.PackageBins, bin)
		for _, e := range ents {
			f.PackageCommands[e.Name()] = true
		}
	}
	return nil
}

// refuseWritableFlake refuses an installable whose flake lies in (or holds) a directory
// the sandbox can write: the working directory, box's own directories.
func refuseWritableFlake(installable, dir string, writable []string) error {
	for _, w := range writable {
		if within(dir, w) || within(w, dir) {
			return errs.WithHint(fmt.Errorf("profile packages: %s reads %s, in or around %s, which the sandbox can write: its flake would be evaluated on the host, as you", installable, dir, w),
				"keep the flake outside the working directory (for example ~/tools), or name a package by a registry (nixpkgs#jq)")
		}
	}
	return nil
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
