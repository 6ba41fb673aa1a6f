package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/policy"
)

// Args builds bwrap's argv (without the program name) for spec on host. It is pure: it
// neither reads nor writes anything. Env values never appear here: they reach the
// sandbox through the process environment, because argv is world-readable in
// /proc/PID/cmdline.
func Args(spec Spec, host Host) ([]string, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
	}
	if protectionOff(ProtSysV) {
		a = slices.DeleteFunc(a, func(s string) bool { return s == "--unshare-ipc" })
	}
	// internet: a namespace of its own; the exec layer attaches user-mode networking
	// and the egress filter before the command is released. allowlist: a namespace with
	// no uplink; the exec layer redirects it to box's proxy before the command is
	// released. full: the host's network, named explicitly by the operator.
	if spec.Network.OwnNetNS() {
		a = append(a, "--unshare-net")
	}
	// No capabilities, and no further user namespaces: the sandbox cannot make itself
	// a namespace where it holds capabilities again.
	a = append(a, "--cap-drop", "ALL", "--disable-userns")
	if spec.Hostname != "" {
		a = append(a, "--hostname", spec.Hostname)
	}

	if spec.NixStore != "" {
		// The helper's user namespace maps the operator to its root: name the
		// operator's own ids inside, as without it.
		a = append(a, "--uid", strconv.Itoa(spec.UID), "--gid", strconv.Itoa(spec.GID))
	}
	for _, s := range host.System {
		if spec.NixStore != "" && s.Path == "/nix/store" {
			// The helper has put the project's store there, over the host's.
			a = append(a, "--bind", "/nix", "/nix")
			continue
		}
		if s.Link != "" {
			a = append(a, "--symlink", s.Link, s.Path)
		} else {
			a = append(a, "--ro-bind", s.Path, s.Path)
		}
	}
	if spec.Network.SharesHostNet() && host.ResolvTarget != "" && !strings.HasPrefix(host.ResolvTarget, "/etc/") {
		d := filepath.Dir(host.ResolvTarget)
		a = append(a, "--ro-bind", d, d)
	}
	if spec.ResolvConf != "" {
		a = append(a, "--ro-bind", spec.ResolvConf, resolvDest(host))
	}
	if spec.Ports.HostsFile != "" {
		a = append(a, "--ro-bind", spec.Ports.HostsFile, "/etc/hosts") // publish.go
	}
	// Scratch space: fresh tmpfs mounts that vanish with the sandbox. /dev is bwrap's
	// own minimal tmpfs; it is made read-only so only /dev/shm there takes files.
	// /proc/sys read-only: a sysctl file's owner may write it whatever capabilities were
	// dropped, and under --allow-root that owner is the sandbox (core_pattern would run
	// a program of its choosing as host root).
	// /proc/keys and /proc/key-users are not namespaced: they list the operator's keys
	// (krb5cc_NAME, tokens) by serial and description, which the keyring's filter
	// keeps unreadable but not unlisted. Empty files stand in.
	a = append(a, "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--ro-bind-try", "/dev/null", "/proc/keys", "--ro-bind-try", "/dev/null", "/proc/key-users",
		"--dev", "/dev")
	// Each scratch tmpfs is sized: unsized, each could hold half the host's RAM.
	a = append(a, sized(spec.Tmpfs.Shm, "/dev/shm")...)
	a = append(a, "--remount-ro", "/dev")
	a = append(a, sized(spec.Tmpfs.Tmp, "/tmp")...)
	a = append(a, sized(spec.Tmpfs.VarTmp, "/var/tmp")...)
	a = append(a, "--dir", "/run")
	for _, l := range host.RunLinks {
		a = append(a, "--symlink", l.Link, l.Path)
	}
	if spec.SSHDir != "" {
		a = append(a, "--ro-bind", spec.SSHDir, SSHDirInside) // box's ssh-agent filter (sshfilter.go)
	}
	if spec.NixDaemon {
		// Opted in by the operator (profile nix = "daemon"): the socket alone; the rest
		// of /nix/var (the database, profiles, GC roots) stays out.
		a = append(a, "--ro-bind", NixDaemonDir, NixDaemonDir)
	}

	// $HOME is an empty tmpfs, sized (or a persistent box's own home): nothing of the
	// real home is there unless bound below.
	if spec.HomeDir != "" {
		a = append(a, "--bind", spec.HomeDir, spec.Home)
	} else {
		a = append(a, sized(spec.Tmpfs.Home, spec.Home)...)
	}
	// The agent's state directory only, a directory: Claude Code replaces ~/.claude.json
	// by rename, which fails (EBUSY) on a bind-mounted file, so the sandbox sets the
	// template's config variable (CLAUDE_CONFIG_DIR) and the file lives in here instead.
	a = append(a, "--bind", filepath.Join(spec.InstanceDir, spec.StateDir), filepath.Join(spec.Home, spec.StateDir))
	for _, f := range spec.AuthFiles {
		a = append(a, "--ro-bind", f, f)
	}
	for _, m := range spec.Mounts {
		op := "--ro-bind"
		if m.RW {
			op = "--bind"
		}
		a = append(a, op, m.Src, m.Dst)
	}
	a = append(a, "--bind", spec.Workdir, spec.Workdir)
	// The protected set: after the working directory, so its binds land on top of it.
	for _, p := range spec.GitBinds {
		a = append(a, "--bind", p, p)
	}
	for _, p := range spec.Pins {
		a = append(a, "--bind", p, p)
	}
	for _, p := range spec.ReadOnly {
		a = append(a, "--ro-bind", p, p)
	}
	for _, r := range spec.Redacted {
		a = append(a, "--ro-bind", r.Copy, r.Path)
	}

	a = append(a, "--dir", BinDir)
	for _, t := range spec.Tools {
		if !host.Covered(t.Path) {
			a = append(a, "--ro-bind", t.Path, t.Path)
		}
		a = append(a, "--symlink", t.Path, filepath.Join(BinDir, t.Name))
	}

	// The sandbox's root is bwrap's tmpfs: make it read-only once everything is in
	// place, so only the mounts meant to be writable are.
	a = append(a, "--remount-ro", "/", "--chdir", spec.Workdir)
	if spec.InfoFD > 0 {
		a = append(a, "--info-fd", strconv.Itoa(spec.InfoFD))
	}
	if spec.BlockFD > 0 {
		a = append(a, "--block-fd", strconv.Itoa(spec.BlockFD))
	}
	if spec.Seccomp != nil {
		// Loaded by bwrap in the sandbox's pid 1 and the command just before they run:
		// bwrap's own setup and the internet tier's helpers (entering from outside) are
		// not under it.
		a = append(a, "--seccomp", strconv.Itoa(spec.SeccompFD))
	}
	a = append(a, "--")
	return append(a, spec.Command...), nil
}

func validate(s Spec) error {
	for what, p := range map[string]string{"working directory": s.Workdir, "home": s.Home, "instance directory": s.InstanceDir} {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("%s %q: want an absolute, clean path", what, p)
		}
	}
	if s.HomeDir != "" && (!filepath.IsAbs(s.HomeDir) || filepath.Clean(s.HomeDir) != s.HomeDir) {
		return fmt.Errorf("box home %q: want an absolute, clean path", s.HomeDir)
	}
	if s.StateDir == "" || filepath.IsAbs(s.StateDir) || filepath.Clean(s.StateDir) != s.StateDir || s.StateDir == ".." || strings.HasPrefix(s.StateDir, "../") {
		return fmt.Errorf("state directory %q: want a clean path relative to the home", s.StateDir)
	}
	if err := CheckWorkdir(s.Workdir, s.Home); err != nil {
		return err
	}
	if err := validateLimits(s.Limits, s.Tmpfs, s.HomeDir != ""); err != nil {
		return err
	}
	if s.InfoFD <= 0 || s.BlockFD <= 0 {
		// The limits are put on the sandbox's pid 1 before the command is released.
		return fmt.Errorf("the sandbox needs the info and block fds: its limits are applied before release")
	}
	switch {
	case !s.Network.Valid():
		return fmt.Errorf("network %q: want %s", s.Network, policy.TierList("or"))
	case s.Network.OwnResolver() && (s.InfoFD <= 0 || s.BlockFD <= 0 || s.ResolvConf == ""):
		return fmt.Errorf("network %s needs the info and block fds and a resolv.conf", s.Network)
	}
	if s.Seccomp != nil && s.SeccompFD <= 0 {
		return fmt.Errorf("a seccomp filter needs its fd")
	}
	if s.NixStore != "" && s.NixDaemon {
		return fmt.Errorf("a per-project Nix store and the host's nix-daemon exclude each other")
	}
	if s.NixStore != "" && (!filepath.IsAbs(s.NixStore) || strings.ContainsAny(s.NixStore, ",:\\")) {
		return fmt.Errorf("nix store directory %q: want an absolute path without ',', ':' or '\\'", s.NixStore)
	}
	if len(s.Command) == 0 || s.Command[0] == "" {
		return fmt.Errorf("no command to run")
	}
	for _, m := range s.Mounts {
		if !filepath.IsAbs(m.Src) || !filepath.IsAbs(m.Dst) {
			return fmt.Errorf("mount %q -> %q: want absolute paths", m.Src, m.Dst)
		}
	}
	for _, l := range [][]string{s.GitBinds, s.Pins, s.ReadOnly} {
		for _, p := range l {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return fmt.Errorf("protected path %q: want an absolute, clean path", p)
			}
		}
	}
	for _, t := range s.Tools {
		if t.Name == "" || strings.Contains(t.Name, "/") || !filepath.IsAbs(t.Path) {
			return fmt.Errorf("tool %q at %q: want a name and an absolute path", t.Name, t.Path)
		}
	}
	return nil
}

// WorkdirError refuses a working directory whose rw bind would expose too much.
type WorkdirError struct{ Dir, Why string }

func (e *WorkdirError) Error() string {
	return fmt.Sprintf("refusing to make %s writable in the sandbox: %s", e.Dir, e.Why)
}

// Hint says what to do instead.
func (e *WorkdirError) Hint() string { return "cd into a project directory and run box there" }

// HomeError refuses a HOME the bwrap mode cannot hide: the sandbox's home is an empty
// tmpfs at $HOME's path, mounted over what is bound there before it, so a HOME of / (what
// a container gives a user without a passwd entry) or of a system directory would cover
// the system the command runs from (field review, session 13: bwrap then failed to find
// sh and exited 1).
type HomeError struct{ Home string }

func (e *HomeError) Error() string {
	return fmt.Sprintf("HOME=%s cannot be hidden in the sandbox: box puts an empty home at $HOME's path, which would cover the system the command runs from", e.Home)
}

// EmptyPathError: PATH is unset or empty (env -i, a job runner that starts with none),
// where box finds neither bwrap nor the command. Field review (session 20): box said the
// installed sh was not found ("install it") and bwrap not installed ("apt-get install
// bubblewrap"), and following either changed nothing.
type EmptyPathError struct{}

func (e *EmptyPathError) Error() string {
	return "PATH is empty: no program can be found, neither bwrap nor the command"
}

// NoHomeError: HOME is unset and the password database has no entry for the user (a
// container running an arbitrary uid).
type NoHomeError struct{}

func (e *NoHomeError) Error() string {
	return "cannot tell your home directory: HOME is unset and your uid has no passwd entry"
}

// MinNofile is the open-file limit box asks of its caller: box, bwrap and the tiers'
// helpers hold pipes, pidfds, sockets and a notification fd each. Measured (field review,
// session 13): a run failed below 24 and the allowlist tier below 36, each with a bare
// "too many open files" from wherever it ran out.
const MinNofile = 64

// NofileError: the hard RLIMIT_NOFILE box was started with is below MinNofile (a
// container or CI runner started with a tiny one); box cannot raise it.
type NofileError struct{ Have, Need uint64 }

func (e *NofileError) Error() string {
	return fmt.Sprintf("the open-file limit is %d (RLIMIT_NOFILE, hard): box and the sandbox's helpers need at least %d", e.Have, e.Need)
}

func checkNofile(hard uint64) error {
	if hard > 0 && hard < MinNofile {
		return &NofileError{Have: hard, Need: MinNofile}
	}
	return nil
}

// CheckHome refuses a home that is / or a system directory the sandbox binds, or holds
// one, and an empty one (no home known: Resolve refuses it first; a plan built otherwise
// must not read "" as /).
func CheckHome(home string) error {
	if home == "" {
		return &NoHomeError{}
	}
	for _, sys := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/dev", "/proc", "/sys", "/run", "/nix/store"} {
		if home == sys || strings.HasPrefix(sys, strings.TrimSuffix(home, "/")+"/") {
			return &HomeError{home}
		}
	}
	return nil
}

// CheckWorkdir refuses /, the home directory and its ancestors, and system directories:
// binding any of them read-write would hand the sandbox the operator's secrets or the
// system.
func CheckWorkdir(dir, home string) error {
	if dir == "/" {
		return &WorkdirError{dir, "it is the root directory"}
	}
	if dir == home || strings.HasPrefix(home, dir+"/") {
		return &WorkdirError{dir, "it holds your home directory (and its secrets)"}
	}
	for _, sys := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/dev", "/proc", "/sys", "/run", "/var", "/nix", "/home", "/root", "/tmp", "/opt"} {
		if dir == sys {
			return &WorkdirError{dir, "it is a system directory"}
		}
	}
	return nil
}

// resolvDest is where the tier's own resolv.conf is bound. bwrap follows a link at the
// destination, so where /etc/resolv.conf links into /run (systemd-resolved:
// ../run/systemd/resolve/stub-resolv.conf, as on Ubuntu and Fedora) it is bound at the
// link's end, which bwrap makes in the sandbox's fresh /run: bound at /etc/resolv.conf
// it failed with "Can't create file at /etc/resolv.conf" (field test, session 19: an
// Incus container of Debian with systemd-resolved, tiers internet and allowlist).
// EtcMissingError: the sandbox's own Path (its /etc/hosts, its /etc/resolv.conf), which
// For needs, cannot be put there: this machine has none, and bwrap binds over an existing
// file only, in the host's read-only /etc. Field review (session 20): an Incus container
// of a minimal image without /etc/hosts; --host-port failed after launch with bwrap's
// "Can't create file at /etc/hosts: Read-only file system" and a generic hint.
type EtcMissingError struct{ Path, For string }

func (e *EtcMissingError) Error() string {
	return fmt.Sprintf("%s needs %s on this machine, which has none: the sandbox's own is bound over it, in the read-only /etc, and bwrap cannot create one there", e.For, e.Path)
}

// checkEtcFiles refuses, before anything starts, a bind of the sandbox's own file onto
// a file of /etc the machine lacks (EtcMissingError).
func (p *Plan) checkEtcFiles() error {
	type file struct{ path, why string }
	var files []file
	if p.Spec.ResolvConf != "" {
		files = append(files, file{resolvDest(p.Host), "the network tier's resolver"})
	}
	if p.Spec.Ports.HostsFile != "" {
		files = append(files, file{"/etc/hosts", "--host-port (host.box.internal)"})
	}
	for _, f := range files {
		if !strings.HasPrefix(f.path, "/etc/") {
			continue // under /run, a tmpfs of the sandbox's own: bwrap makes it
		}
		if _, err := os.Lstat(f.path); errors.Is(err, fs.ErrNotExist) {
			return &EtcMissingError{Path: f.path, For: f.why}
		}
	}
	return nil
}

func resolvDest(host Host) string {
	if strings.HasPrefix(host.ResolvTarget, "/run/") {
		return host.ResolvTarget
	}
	return "/etc/resolv.conf"
}
