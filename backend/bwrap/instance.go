package bwrap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/heavy-duty/box/internal/charclass"
	"github.com/heavy-duty/box/policy"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// InstanceDir is the per-project, per-profile directory standing in for ~/.claude:
// conversation history is scoped per project, and each profile has its own, so a run of
// one profile (tier none, no credentials) cannot plant hooks in ~/.claude/settings.json
// that a later run of another (internet, auth passthrough) executes. Within a profile,
// flags widen a run: trust.go keeps a narrower run's state from a wider one.
func InstanceDir(dataHome, workdir, profile string) string {
	return LegacyInstanceDir(dataHome, workdir) + "@" + profile
}

// LegacyInstanceDir is where earlier versions kept one instance directory per project,
// shared by every profile. box no longer uses it and never migrates it into a profile's
// (whichever profile inherited it would run what any profile's sandbox planted there);
// it stays, untouched, for the operator to copy from.
func LegacyInstanceDir(dataHome, workdir string) string {
	sum := sha256.Sum256([]byte(workdir))
	base := []byte(filepath.Base(workdir))
	for i, c := range base {
		if !safeChars[c] {
			base[i] = '_'
		}
	}
	return filepath.Join(dataHome, "box", "instances", string(base)+"-"+hex.EncodeToString(sum[:])[:16])
}

var safeChars = charclass.New("A-Za-z0-9._-")

// Policy is what SANDBOX.md tells the agent about where it is.
type Policy struct {
	Profile   string
	Template  string
	Network   policy.Tier
	Workdir   string
	Writable  []string // beyond the working directory and ~/.claude
	ReadOnly  []string // extra read-only mounts
	Tools     []string
	Auth      bool
	Notes     string   // the template's own notes
	Limits    string   // the sandbox's resource limits, in words
	Protected []string // the protected set's read-only paths
	// The agent's layout (template data): its state dir (home-relative), the file there
	// that imports SANDBOX.md, and its credential files (StateDir-relative).
	StateDir     string
	Instructions string
	Credentials  []string
	Box          string // a persistent bwrap box's name; "" for box run
	// Nix: the profile's packages (installables), a minimal PATH, the host daemon.
	Packages    []string
	MinimalPath bool
	NixDaemon   bool
	NixStore    bool
	DevShell    string // the Nix dev shell's installable ("": none)
	// SyscallsAllowed are the filter groups the profile opted back into.
	SyscallsAllowed []string
	// AbstractScoped: tier full with Landlock's abstract-socket scope (Spec.ScopeAbstract).
	AbstractScoped bool
	// Tier allowlist: the allowed patterns, and the run's id (for box allow --run).
	Allow []string
	RunID string
	// GitIdentity is the identity the sandbox's git commits with ("": none passed).
	GitIdentity string
	// GitCreds: a git config held credentials the sandbox sees a copy without (gitcreds.go).
	GitCreds bool
	// SSH is SANDBOX.md's section on box's ssh-agent filter ("": none; sshText).
	SSH string
	// Ports are the published ports and the host ports reachable (publish.go).
	Ports Ports
}

// RefusalsFile is where, in the agent's state directory (~/.claude), the allowlist tier writes what it
// refused (box's copy for the agent; the operator's is the run log).
const RefusalsFile = "box-network.log"

// allowText is SANDBOX.md's part about the allowlist: what is allowed, where refusals
// are written, and how to ask for more.
func allowText(p Policy) string {
	var b strings.Builder
	if len(p.Allow) == 0 {
		b.WriteString("Allowed: nothing.\n")
	} else {
		fmt.Fprintf(&b, "Allowed: `%s`.\n", strings.Join(p.Allow, "`, `"))
	}
	fmt.Fprintf(&b, "\nEvery refused name or connection is written, one line each (time, refused or refused-dns, or unreachable for an allowed name the host could not reach, name, address:port, reason), to `~/%s/%s`. Read it when a download or an API call fails, and ask the operator for the exact name you need: they can allow it while you run (`box allow --run %s NAME`), and the change is written there too.\n", p.StateDir, RefusalsFile, p.RunID)
	return b.String()
}

// SandboxMD renders SANDBOX.md from the live policy. Pure.
func SandboxMD(p Policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# You are in a box sandbox\n\n")
	fmt.Fprintf(&b, "This session runs inside `box` (bubblewrap), profile `%s`, template `%s`.\n", p.Profile, p.Template)
	fmt.Fprintf(&b, "It is generated at every launch from the policy in force; do not edit it.\n\n")
	fmt.Fprintf(&b, "## Network\n\n%s", p.Network.Explain())
	if p.Network.SharesHostNet() {
		if p.AbstractScoped {
			b.WriteString(" The host's abstract unix sockets (an X server, D-Bus) are not reachable: connecting to one is refused (\"Operation not permitted\").")
		} else {
			b.WriteString(" So are the host's abstract unix sockets (an X server, D-Bus).")
		}
	}
	b.WriteString("\n\n")
	if p.Network.Proxied() {
		fmt.Fprintf(&b, "%s\n", allowText(p))
	}
	b.WriteString(p.SSH)
	b.WriteString(portsText(p.Ports)) // publish.go
	fmt.Fprintf(&b, "## Files\n\n")
	if p.Box != "" {
		fmt.Fprintf(&b, "- Writable: the working directory `%s`, `$HOME` and `~/%s` (box `%s`'s own, kept between sessions: logins and tools under ~/.local stay in the box), and scratch space that vanishes when the session ends: `/tmp`, `/var/tmp`, `/dev/shm`", p.Workdir, p.StateDir, p.Box)
	} else {
		fmt.Fprintf(&b, "- Writable: the working directory `%s`, `~/%s` (this project's own instance directory), and scratch space that vanishes when the session ends: `/tmp`, `/var/tmp`, `/dev/shm` and `$HOME`", p.Workdir, p.StateDir)
	}
	for _, w := range p.Writable {
		fmt.Fprintf(&b, ", `%s`", w)
	}
	fmt.Fprintf(&b, ".\n- Everything else is read-only (system directories) or absent: the operator's home directory, SSH and GPG agents, cloud credentials and /run/user are not here.\n")
	if len(p.Protected) > 0 {
		fmt.Fprintf(&b, "- Read-only inside the working directory, because tools outside the sandbox run or obey them: git hooks and config (commits, branches, rebases work; `git config` writes, `git remote add` and `git submodule init` fail: pass settings with `git -c` or ask the operator)")
		var others []string
		for _, r := range p.Protected {
			if rel, err := filepath.Rel(p.Workdir, r); err == nil && !strings.HasPrefix(rel, "..") && !strings.Contains(rel, ".git/") && filepath.Base(rel) != ".git" {
				others = append(others, "`"+rel+"`")
			}
		}
		if len(others) > 0 {
			fmt.Fprintf(&b, ", and: %s", strings.Join(others, " "))
		}
		fmt.Fprintf(&b, ".\n")
	}
	b.WriteString(gitText(p.GitIdentity))
	if p.GitCreds {
		b.WriteString("- Git: a git config (the repository's, or the system's /etc/gitconfig) held the operator's credentials; you see a copy without them (remote URLs without their user and token, `http.extraheader` empty), so fetching from or pushing to those remotes needs credentials of this sandbox's own.\n")
	}
	if len(p.ReadOnly) > 0 {
		fmt.Fprintf(&b, "- Also visible read-only: `%s`.\n", strings.Join(p.ReadOnly, "`, `"))
	}
	if p.Auth {
		fmt.Fprintf(&b, "- The operator's Claude login is passed through read-only.\n")
	}
	if p.Limits != "" {
		fmt.Fprintf(&b, "\n## Limits\n\n%s\n", p.Limits)
	}
	fmt.Fprintf(&b, "\n## Tools\n\n")
	if len(p.Tools) > 0 {
		fmt.Fprintf(&b, "On PATH from the profile: %s. ", strings.Join(p.Tools, ", "))
	}
	if len(p.Packages) > 0 {
		fmt.Fprintf(&b, "Nix packages from the profile, read-only on PATH: %s. ", strings.Join(p.Packages, ", "))
	}
	if p.MinimalPath {
		fmt.Fprintf(&b, "PATH is minimal: only those and the Nix tools, not the system's /usr/bin (its files are still readable there). ")
	} else {
		fmt.Fprintf(&b, "The system's own commands (/usr/bin) are available. ")
	}
	if p.DevShell != "" {
		fmt.Fprintf(&b, "You are in the project's Nix dev shell %s: its PATH and variables were set when the sandbox started, and its shellHook ran here. To get more tools, ask the operator to add them to the dev shell (or the profile's `packages`)%s. ", p.DevShell, map[bool]string{true: ", or use `nix shell nixpkgs#TOOL` (this project's own store)", false: ""}[p.NixStore])
	}
	if p.NixStore {
		fmt.Fprintf(&b, "Nix works here with a store of this project's own, layered over the host's read-only one: `nix shell nixpkgs#TOOL`, `nix build`, `nix run` (and `,` where installed) build and download inside this sandbox, under its network tier; what you install persists for this project and profile, never in the host's store. ")
	} else if p.NixDaemon {
		fmt.Fprintf(&b, "The host's nix-daemon is reachable (`nix shell nixpkgs#TOOL`, `nix build`): the operator opted in, and what it builds runs on the host. ")
	} else {
		fmt.Fprintf(&b, "The Nix store is read-only here and there is no nix-daemon: `nix shell`/`nix build` cannot install anything. ")
	}
	fmt.Fprintf(&b, "You cannot install system packages (no root, no writes outside the working directory); if a tool is missing, install it into the working directory or ask the operator to add it to the profile's `tools` or `packages` (Nix installables such as nixpkgs#jq).\n")
	fmt.Fprintf(&b, "\n## Kernel\n\n")
	fmt.Fprintf(&b, "A syscall filter refuses, with \"Operation not permitted\" (EPERM): tracing other processes (gdb, strace), perf, io_uring, userfaultfd, the kernel keyring (keyctl), mounting, new namespaces, and sockets other than unix, IPv4, IPv6 and routing netlink. ")
	if len(p.SyscallsAllowed) > 0 {
		fmt.Fprintf(&b, "The operator opted back into: %s. ", strings.Join(p.SyscallsAllowed, ", "))
	}
	fmt.Fprintf(&b, "If a tool needs one of these, ask the operator: a profile of theirs may allow %s (`syscalls = [...]`).\n", strings.Join(policy.SyscallOptInNames(), ", "))
	if p.Notes != "" {
		fmt.Fprintf(&b, "\n## Notes\n\n%s\n", strings.TrimSpace(p.Notes))
	}
	return b.String()
}

const importLine = "@SANDBOX.md"

// PrepareInstance makes the instance directory (0700), SANDBOX.md from the policy, and
// a CLAUDE.md that imports it; an existing CLAUDE.md keeps its content and gains the
// import line once.
//
// The sandbox writes this directory, so box treats what it finds there as hostile: it
// reads only regular files, never through a symlink (a CLAUDE.md pointing at ~/.ssh/id_*
// would otherwise be copied in for the sandbox to read), and replaces files by rename.
func PrepareInstance(dir string, p Policy) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	claude := filepath.Join(dir, p.StateDir)
	// What the sandbox left where box needs a file or a directory of its own (a
	// directory, a link, a fifo) is moved aside, never deleted and never followed, so
	// the next run heals instead of failing.
	if fi, err := os.Lstat(claude); err == nil && !fi.IsDir() {
		if err := moveAside(claude); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(claude, 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(claude); err != nil || !fi.IsDir() {
		return fmt.Errorf("instance directory %s is not a directory", claude)
	}
	// The credentials mount points must be plain files (or absent): bwrap would follow a
	// planted link and create the mount point wherever it points.
	for _, c := range p.Credentials {
		creds := filepath.Join(claude, c)
		if fi, err := os.Lstat(creds); err == nil && !fi.Mode().IsRegular() {
			if err := moveAside(creds); err != nil {
				return err
			}
		}
	}
	sandbox, md0 := filepath.Join(claude, "SANDBOX.md"), []byte(SandboxMD(p))
	if cur, err := readRegular(sandbox); err != nil || !bytes.Equal(cur, md0) {
		if err := writeHealing(sandbox, md0); err != nil {
			return err
		}
	}
	if p.Instructions == "" {
		return nil
	}
	md := filepath.Join(claude, p.Instructions)
	old, err := readRegular(md)
	if err != nil && !os.IsNotExist(err) {
		old = nil // not a regular file (a symlink, a fifo, a directory...): moved aside, never read
	}
	for _, l := range strings.Split(string(old), "\n") {
		if strings.TrimSpace(l) == importLine {
			return nil
		}
	}
	text := importLine + "\n"
	if len(old) > 0 {
		text = string(old)
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "\n" + importLine + "\n"
	}
	return writeHealing(md, []byte(text))
}

// writeHealing writes path atomically; whatever other than a regular file is there is
// moved aside first (rename cannot replace a directory).
func writeHealing(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		if err := moveAside(path); err != nil {
			return err
		}
	}
	return writeAtomic(path, data)
}

// moveAside renames path to PATH.box-moved-N (the first free N), keeping what was there.
func moveAside(path string) error {
	for n := 1; n < 1000; n++ {
		aside := fmt.Sprintf("%s.box-moved-%d", path, n)
		if _, err := os.Lstat(aside); err == nil {
			continue
		}
		if err := os.Rename(path, aside); err != nil {
			return fmt.Errorf("instance directory: moving %s aside: %w", path, err)
		}
		return nil
	}
	return fmt.Errorf("instance directory: %s: too many moved-aside copies; remove some", path)
}

// maxInstanceFile bounds what box reads back from the instance directory.
const maxInstanceFile = 1 << 20

// errNotRegular: the path is there but is not a plain file box may read.
var errNotRegular = errors.New("not a regular file")

// readRegular reads path only if it is a regular file (not followed through a symlink)
// of reasonable size.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		return nil, errNotRegular // ELOOP for a symlink, among others
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxInstanceFile {
		return nil, errNotRegular
	}
	return io.ReadAll(io.LimitReader(f, maxInstanceFile))
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".box-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
