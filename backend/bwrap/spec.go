// Package bwrap is the bubblewrap backend: a pure argv builder (Args) fed by a Spec (what
// the sandbox should be) and a Host (facts about the machine, found by DetectHost, the
// only place that looks at the filesystem), and a thin exec layer (Run).
package bwrap

import (
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"github.com/heavy-duty/box/policy"
)

// Tier is a network tier (policy's).
type Tier = policy.Tier

// Network tiers.
const (
	NetNone     = policy.NetNone
	NetInternet = policy.NetInternet
	NetFull     = policy.NetFull
	// NetAllowlist: only allowed names, through box's proxy (backend/bwrap/inet).
	NetAllowlist = policy.NetAllowlist
)

// BinDir is the sandbox directory holding a symlink per tool; it leads PATH.
const BinDir = "/run/box/bin"

// Spec is everything the sandbox is made of. Paths are absolute and clean.
type Spec struct {
	Workdir     string      // mounted read-write at its own path; the command starts here
	Home        string      // $HOME inside: an empty tmpfs at the operator's home path
	HomeDir     string      // "" or a persistent box's own home, bound at Home instead of the tmpfs
	InstanceDir string      // host dir whose StateDir stands in for ~/StateDir
	StateDir    string      // the agent's state directory, home-relative (template data: .claude)
	Network     policy.Tier // a tier of policy.Tiers
	Allow       []string    // NetAllowlist: the allowed patterns, lists expanded (policy.Pattern)
	Mounts      []Mount     // extra binds a profile names
	AuthFiles   []string    // host credential files, bound read-only at the same path
	Tools       []Tool      // linked into BinDir
	Command     []string    // argv of the sandboxed command
	// The protected set (package protect), bound after the working directory: GitBinds
	// read-write (git directories outside it that commits need), then Pins onto
	// themselves read-write (mount points cannot be renamed away), then ReadOnly.
	GitBinds []string
	Pins     []string
	ReadOnly []string
	// Redacted are copies of git configs without their credentials (gitcreds.go),
	// bound read-only over the originals after ReadOnly.
	Redacted   []RedactedConfig
	ResolvConf string // host file bound at /etc/resolv.conf ("" keeps the host's)
	Hostname   string // "" leaves the default
	InfoFD     int    // > 0: bwrap --info-fd (the exec layer reads the child pid)
	BlockFD    int    // > 0: bwrap --block-fd (the sandbox waits until released)
	// Seccomp is the syscall filter the command runs under (nil: none); the exec layer
	// hands its program to bwrap at SeccompFD.
	Seccomp   *seccomp.Filter
	SeccompFD int
	// Limits are applied by the exec layer to the sandbox's pid 1 before it is released
	// (so BlockFD is required); Tmpfs sizes every scratch mount (bwrap --size).
	Limits Limits
	Tmpfs  Tmpfs
	// NixDaemon binds the host's nix-daemon socket (profile nix = "daemon", opted in by
	// the operator); otherwise only /nix/store is visible, read-only.
	NixDaemon bool
	// NixStore, when set, is the host directory of a per-project Nix store layered over
	// the host's (profile nix = "store"): /nix inside is writable, the host's store is
	// not. The sandbox then runs as UID/GID (the operator's), mapped through box's helper.
	NixStore string
	UID, GID int
	// ScopeAbstract starts the sandbox in a Landlock domain that cannot reach abstract
	// unix sockets bound outside it (tier full, where the network namespace is the
	// host's; the other tiers have a namespace of their own).
	ScopeAbstract bool
	// UnixSockets mediates the sandbox's path unix sockets (unixsock.go).
	UnixSockets UnixSockets
	// SSHDir is the run's ssh directory, bound read-only at SSHDirInside (sshfilter.go).
	SSHDir string
	// Ports are the published ports and the host ports reachable (publish.go).
	Ports Ports
}

// NixDaemonDir holds the host nix-daemon's socket.
const NixDaemonDir = "/nix/var/nix/daemon-socket"

// Mount is one extra bind.
type Mount struct {
	Src, Dst string
	RW       bool
}

// Tool is a command found on the host PATH. Path is its real (symlink-resolved) path.
type Tool struct {
	Name, Path string
}

// Host holds the facts about the machine the argv depends on.
type Host struct {
	// System lists the system paths that exist: directories are bound read-only,
	// symlinks (merged /usr: /bin -> usr/bin) are recreated.
	System []SysPath
	// ResolvTarget is where /etc/resolv.conf really lives when that is outside /etc
	// (systemd-resolved: /run/systemd/resolve/...); tier full binds it so DNS works.
	ResolvTarget string
	// RunLinks are links under /run into the Nix store (NixOS: /run/current-system),
	// recreated inside so store-path tools and scripts naming them work.
	RunLinks []SysPath
}

// SysPath is a system path and, for a symlink, its target.
type SysPath struct {
	Path string
	Link string // non-empty for a symlink
}

// Covered reports whether path is inside a read-only system directory, so a tool there
// is already visible and needs no bind of its own.
func (h Host) Covered(path string) bool {
	for _, s := range h.System {
		if s.Link == "" && (path == s.Path || strings.HasPrefix(path, s.Path+"/")) {
			return true
		}
	}
	return false
}

// systemBin are the system's command directories on the sandbox's PATH.
const systemBin = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// PATH is the sandbox's default search path: the profile's tools first, then the system
// dirs. Nothing from the operator's home is on it.
func PATH() string { return SandboxPATH(nil, false) }

// SandboxPATH is the sandbox's search path: the tools' directory, the profile's package
// bin directories (store paths), then, unless minimal, the system's directories.
func SandboxPATH(packageBins []string, minimal bool) string {
	dirs := append([]string{BinDir}, packageBins...)
	if !minimal {
		dirs = append(dirs, systemBin)
	}
	return strings.Join(dirs, ":")
}
