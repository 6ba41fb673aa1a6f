// Package profiles holds the profile model: how a box is run. A profile names the
// backend, the template, the network tier, extra environment names, extra mounts, tools,
// the command, host auth passthrough and (vm) resources. Profiles are TOML decoded
// strictly; built-ins are embedded and user ones in $XDG_CONFIG_HOME/box/profiles/NAME.toml
// add to or override them.
package profiles

import (
	"fmt"
	"github.com/heavy-duty/box/internal/charclass"
	"github.com/heavy-duty/box/policy"
	"strings"

	"github.com/heavy-duty/box/templates"
)

// Backends and network tiers: closed sets.
const (
	BackendBwrap = "bwrap"
	BackendVM    = "vm"

	NetNone     = policy.NetNone
	NetInternet = policy.NetInternet
	NetFull     = policy.NetFull
	// NetAllowlist: only the names in the profile's allow key (and --allow).
	NetAllowlist = policy.NetAllowlist
)

// Tiers lists the network tiers in order of exposure.
var Tiers = policy.Tiers

// vmNetwork is the tier a vm box has: the box bridge's public internet.
const vmNetwork = NetInternet

// Profile is one parsed, validated profile.
type Profile struct {
	Name   string `toml:"-"`
	Source string `toml:"-"` // "built-in" or the file it came from

	Description     string      `toml:"description"`
	Backend         string      `toml:"backend"`
	Template        string      `toml:"template"`
	Network         policy.Tier `toml:"network"`
	Allow           []string    `toml:"allow"` // network = "allowlist": names, *.names, @lists
	Env             []string    `toml:"env"`
	Mounts          []Mount     `toml:"mounts"`
	Tools           []string    `toml:"tools"`
	Command         []string    `toml:"command"`
	AuthPassthrough bool        `toml:"auth_passthrough"`
	CPU             string      `toml:"cpu"`
	Memory          string      `toml:"memory"`
	Disk            string      `toml:"disk"`
	// The protected set (bwrap): paths added to it, entries dropped from it. Only a
	// user's own profile may drop; box warns at every launch that does.
	ProtectAdd  []string `toml:"protect_add"`
	ProtectDrop []string `toml:"protect_drop"`
	// Syscalls names groups of the bwrap sandbox's syscall filter to turn off (a
	// debugger needs "ptrace"); only a profile in the user's config directory may.
	Syscalls []string `toml:"syscalls"`
	// Sockets names host unix sockets (absolute, or relative to the working directory)
	// the bwrap sandbox may connect to; every other socket it did not create is refused.
	Sockets []string `toml:"sockets"`
	// Publish (bwrap): sandbox ports reachable on the host's loopback (3000 or
	// "8080:3000"); HostPorts: host loopback ports the sandbox reaches as
	// host.box.internal. Tiers none, allowlist and internet (backend/bwrap/publish.go).
	Publish   []policy.PortMap `toml:"publish"`
	HostPorts []int            `toml:"host_ports"`
	// Nix (bwrap): installables box realises on the host at launch and puts on PATH,
	// the PATH shape, and whether the host's nix-daemon is reachable inside.
	Packages []string `toml:"packages"`
	Path     string   `toml:"path"`
	Nix      string   `toml:"nix"`
	// Pids bounds the processes and threads of a box (bwrap: the sandbox; vm:
	// limits.processes of a container). nil: the default.
	Pids *int `toml:"pids"`
	// GitIdentity (bwrap): pass the operator's git user.name and user.email into the
	// sandbox's git (nil: yes; false: no).
	GitIdentity *bool `toml:"git_identity"`
	// Isolation (bwrap): "bwrap" (the default), "landlock" (no namespaces, said at every
	// launch) or "auto" (the opt-in: bwrap, else the Landlock mode where bwrap cannot
	// start). The values are backend/bwrap's (ValidIsolation).
	Isolation string `toml:"isolation"`
	// DevShell (bwrap, user profiles only): a Nix dev shell the sandbox starts in
	// ("true": the working directory's flake's default; else an installable).
	DevShell DevShellSetting `toml:"devshell"`
	// SSH (bwrap): box's filtering ssh-agent (docs/bwrap.md, "SSH agent"). Only a
	// profile in the user's config directory may set it.
	SSH *SSH `toml:"ssh"`
}

// DevShellSetting is devshell's value: true, false or an installable ("true" for true,
// "" for false or unset).
type DevShellSetting string

// UnmarshalTOML takes a boolean or an installable.
func (d *DevShellSetting) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case bool:
		*d = ""
		if v {
			*d = "true"
		}
	case string:
		if v == "" {
			*d = ""
			return nil
		}
		if err := ValidDevShell(v); err != nil {
			return err
		}
		*d = DevShellSetting(v)
	default:
		return fmt.Errorf("devshell: want true or an installable naming a dev shell")
	}
	return nil
}

// ValidDevShell checks a devshell installable (--devshell's or a profile's): a flake
// reference, relative ones read from the working directory ("path:.#default", ".#ci").
func ValidDevShell(s string) error {
	switch {
	case s == "true":
		return nil
	case s == "" || strings.HasPrefix(s, "-"):
		return fmt.Errorf("devshell %q: want true or an installable naming a dev shell (path:.#default)", s)
	case strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("devshell %q: contains a space or a control character", s)
	}
	return nil
}

// SSH is a profile's ssh key: the destinations the sandbox may authenticate to, the host
// agent's keys it sees (fingerprints SHA256:... or comments), whether it may make git's
// SSH signatures, and host keys (known_hosts lines) beside the user's known_hosts.
type SSH struct {
	Hosts    []string `toml:"hosts"`
	Keys     []string `toml:"keys"`
	Sign     bool     `toml:"sign"`
	HostKeys []string `toml:"host_keys"`
}

// PassGitIdentity reports whether the operator's git identity enters the sandbox.
func (p *Profile) PassGitIdentity() bool { return p.GitIdentity == nil || *p.GitIdentity }

// Pids bounds: fewer than MinPids tasks cannot run a shell and its tools; MaxPids is the
// kernel's own ceiling (PID_MAX_LIMIT). DefaultPids is the bound when a profile names
// none (bwrap sandboxes and vm containers alike).
const (
	MinPids     = 16
	MaxPids     = 4194304
	DefaultPids = 4096
)

// PATH shapes and Nix modes: closed sets.
const (
	PathSystem  = "system"  // the default: the profile's tools and packages, then the system's bin dirs
	PathMinimal = "minimal" // the profile's tools and packages and the Nix tools only

	NixNone   = "none"   // the default: the host's store read-only, no nix-daemon inside
	NixStore  = "store"  // a per-project store layered over the host's: builds run inside, on the sandbox's tier
	NixDaemon = "daemon" // the host's nix-daemon socket inside: builds run on the host's network
)

// Mount is an extra host path made visible in a bwrap sandbox.
type Mount struct {
	Path   string `toml:"path"`   // on the host; ~/ means the operator's home
	Target string `toml:"target"` // inside; defaults to Path
	Mode   string `toml:"mode"`   // "ro" (default) or "rw"
}

// RW reports whether the mount is writable.
func (m Mount) RW() bool { return m.Mode == "rw" }

var (
	envFirst = charclass.New("A-Za-z_")
	envRest  = charclass.New("A-Za-z0-9_")
)

// ValidName checks a profile name. Names are names, not paths.
func ValidName(name string) error {
	if !templates.NameOK(name) {
		return fmt.Errorf("invalid profile name %q: a name is letters, digits, '-' and '_' (not a path)", name)
	}
	return nil
}

// The isolation modes of a bwrap sandbox (backend/bwrap/isolation.go says what each holds).
const (
	IsolationBwrap    = "bwrap"
	IsolationLandlock = "landlock"
	IsolationAuto     = "auto" // the opt-in: bwrap, else the Landlock mode where bwrap cannot start
)

// ValidIsolation checks an isolation mode's name ("" is the default, bwrap).
func ValidIsolation(s string) error {
	switch s {
	case "", IsolationBwrap, IsolationLandlock, IsolationAuto:
		return nil
	}
	return fmt.Errorf("unknown isolation %q: want %s, %s or %s", s, IsolationBwrap, IsolationLandlock, IsolationAuto)
}

// ValidNetwork checks a network tier name.
func ValidNetwork(n string) error {
	_, err := policy.ParseTier(n)
	return err
}

// ValidBackend checks a backend name.
func ValidBackend(b string) error {
	if b != BackendBwrap && b != BackendVM {
		return fmt.Errorf("backend %q: want %s or %s", b, BackendBwrap, BackendVM)
	}
	return nil
}

// ValidEnvName checks an environment variable name (or NAME_* prefix pattern).
func ValidEnvName(n string) error {
	// A variable name, or a prefix pattern ending in * (LC_*).
	if !charclass.Match(strings.TrimSuffix(n, "*"), envFirst, envRest, 0) {
		return fmt.Errorf("env %q: want a variable name such as MY_VAR (or a prefix pattern such as MY_*)", n)
	}
	return nil
}

// ValidInstallable checks a Nix installable as box passes it to nix build: a flake
// reference with an attribute (nixpkgs#jq, path:/srv/tools#fmt, github:o/r#pkg) or a
// store path. Never an option: it is passed after "--".
func ValidInstallable(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("an installable is empty")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("installable %q: starts with '-' (an option, not a package)", s)
	case strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("installable %q: contains a space or a control character", s)
	case strings.HasPrefix(s, "/nix/store/"):
		return nil
	case !strings.Contains(s, "#") || strings.HasSuffix(s, "#"):
		return fmt.Errorf("installable %q: want a flake reference with an attribute (nixpkgs#jq, path:/srv/tools#fmt) or a /nix/store path", s)
	}
	if p, local := InstallablePath(s); local && !strings.HasPrefix(p, "/") {
		// Relative to where box runs: the working directory, which the sandbox writes.
		return fmt.Errorf("installable %q: a relative path is read from the working directory, which the sandbox can write (its flake would be evaluated on the host, as you); give an absolute path outside it", s)
	}
	return nil
}

// localSchemes are the flake reference schemes that read a local directory.
var localSchemes = []string{"path:", "git+file:", "hg+file:", "file:", "tarball+file:", "file+file:", "sourcehut+file:"}

// InstallablePath is the local directory a flake reference reads (before '#', without
// its scheme and query), when it reads one: "/srv/tools" for path:/srv/tools#fmt, "."
// for .#fmt. Nix evaluates such a flake on the host, as the operator: box must never take
// one from a directory the sandbox can write.
func InstallablePath(s string) (string, bool) {
	ref, _, _ := strings.Cut(s, "#")
	ref, _, _ = strings.Cut(ref, "?")
	for _, sc := range localSchemes {
		if rest, ok := strings.CutPrefix(ref, sc); ok {
			return strings.TrimPrefix(rest, "//"), true
		}
	}
	if strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "~") {
		return ref, true
	}
	return "", false
}

// applyDefaults fills what a profile left empty.
func (p *Profile) applyDefaults() {
	if p.Backend == "" {
		p.Backend = BackendBwrap
	}
	if p.Template == "" {
		p.Template = "blank"
	}
	if p.Network == "" {
		// A vm box has the box bridge's network; a bwrap sandbox none until asked.
		p.Network = NetNone
		if p.Backend == BackendVM {
			p.Network = vmNetwork
		}
	}
	for i := range p.Mounts {
		if p.Mounts[i].Mode == "" {
			p.Mounts[i].Mode = "ro"
		}
		if p.Mounts[i].Target == "" {
			p.Mounts[i].Target = p.Mounts[i].Path
		}
	}
}

// Validate checks every field. Errors name the field.
func (p *Profile) Validate() error {
	if err := ValidBackend(p.Backend); err != nil {
		return err
	}
	if err := templates.ValidName(p.Template); err != nil {
		return err
	}
	if err := ValidNetwork(string(p.Network)); err != nil {
		return err
	}
	if p.Backend == BackendVM && !p.Network.VMCapable() {
		return fmt.Errorf("network %q is for the bwrap backend only: a vm box is always isolated", p.Network)
	}
	if len(p.Allow) > 0 && !p.Network.Proxied() {
		return fmt.Errorf("allow is the allowlist tier's: set network = %q, or remove allow", NetAllowlist)
	}
	if _, err := policy.ParseAllow(p.Allow); err != nil {
		return err
	}
	for _, e := range p.Env {
		if err := ValidEnvName(e); err != nil {
			return err
		}
	}
	for i, m := range p.Mounts {
		if m.Path == "" {
			return fmt.Errorf("mounts[%d]: path is empty", i)
		}
		for _, s := range []string{m.Path, m.Target} {
			if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
				return fmt.Errorf("mounts[%d]: %q: want an absolute path or ~/path", i, s)
			}
			if strings.ContainsAny(s, "\x00\n") {
				return fmt.Errorf("mounts[%d]: path contains a control character", i)
			}
		}
		if m.Mode != "ro" && m.Mode != "rw" {
			return fmt.Errorf("mounts[%d]: mode %q: want ro or rw", i, m.Mode)
		}
	}
	for _, t := range p.Tools {
		if err := templates.ValidTool(t); err != nil {
			return err
		}
	}
	if len(p.Command) > 0 && p.Command[0] == "" {
		return fmt.Errorf("command: the program name is empty")
	}
	for _, a := range p.Command {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("command: an argument contains a NUL byte")
		}
	}
	if err := policy.CheckProtect(p.ProtectAdd, p.ProtectDrop); err != nil {
		return err
	}
	if len(p.Syscalls) > 0 {
		if p.Backend != BackendBwrap {
			return fmt.Errorf("syscalls: the syscall filter is the bwrap backend's; a vm box has its own kernel")
		}
		if err := policy.CheckSyscallOptIn(p.Syscalls); err != nil {
			return err
		}
	}
	for i, s := range p.Sockets {
		if s == "" || strings.ContainsAny(s, "\x00\n") || len(s) > 4096 {
			return fmt.Errorf("sockets[%d]: %q: want a socket's path (absolute, or relative to the working directory)", i, s)
		}
		if p.Backend == BackendVM {
			return fmt.Errorf("sockets: a vm box shares no socket with the host")
		}
	}
	if err := policy.CheckPorts(p.Publish, p.HostPorts); err != nil {
		return err
	}
	if (len(p.Publish) > 0 || len(p.HostPorts) > 0) && p.Network.SharesHostNet() {
		return fmt.Errorf("publish and host_ports: network %q shares the host's network, so the sandbox's ports are the host's already and every host port is reachable; remove them, or choose another network", p.Network)
	}
	for i, pk := range p.Packages {
		if err := ValidInstallable(pk); err != nil {
			return fmt.Errorf("packages[%d]: %w", i, err)
		}
	}
	if p.Path != "" && p.Path != PathSystem && p.Path != PathMinimal {
		return fmt.Errorf("path %q: want %s or %s", p.Path, PathSystem, PathMinimal)
	}
	if p.Isolation != "" {
		if p.Backend == BackendVM {
			return fmt.Errorf("isolation: a vm box is isolated by its own kernel; isolation is the bwrap backend's")
		}
		if err := ValidIsolation(p.Isolation); err != nil {
			return fmt.Errorf("isolation: %w", err)
		}
	}
	if err := p.SSH.validate(p.Backend); err != nil {
		return err
	}
	if p.Nix != "" && p.Nix != NixNone && p.Nix != NixStore && p.Nix != NixDaemon {
		return fmt.Errorf("nix %q: want %s, %s or %s", p.Nix, NixNone, NixStore, NixDaemon)
	}
	if p.Backend == BackendVM {
		switch {
		case len(p.Packages) > 0:
			return fmt.Errorf("packages: the vm backend does not honour it (a vm box installs its tools itself; use the template's cloud-init)")
		case p.Path == PathMinimal:
			return fmt.Errorf("path: the vm backend does not honour it (it shapes a bwrap sandbox's PATH)")
		case p.Nix == NixDaemon || p.Nix == NixStore:
			return fmt.Errorf("nix: the vm backend does not honour it (it shapes a bwrap sandbox's Nix store)")
		case p.DevShell != "":
			return fmt.Errorf("devshell: the vm backend does not honour it (a bwrap sandbox's Nix dev shell)")
		}
	}
	if p.CPU != "" {
		if err := templates.ValidCPU(p.CPU); err != nil {
			return err
		}
	}
	if p.Memory != "" {
		if err := templates.ValidSize("memory", p.Memory); err != nil {
			return err
		}
	}
	if p.Disk != "" {
		if err := templates.ValidSize("disk", p.Disk); err != nil {
			return err
		}
	}
	if p.Pids != nil && (*p.Pids < MinPids || *p.Pids > MaxPids) {
		return fmt.Errorf("pids %d: want a number of processes from %d to %d", *p.Pids, MinPids, MaxPids)
	}
	return nil
}

// validate checks the ssh key's shape; its hosts and host keys are checked where they
// are resolved (backend/bwrap/sshagent), with the user's known_hosts.
func (s *SSH) validate(backend string) error {
	if s == nil {
		return nil
	}
	if backend == BackendVM {
		return fmt.Errorf("ssh: box's filtering ssh-agent serves a bwrap sandbox; a vm box has no agent of the host")
	}
	if len(s.Keys) == 0 {
		return fmt.Errorf("ssh: keys is empty: name the host agent's keys the sandbox may use (SHA256:... fingerprints or comments, as ssh-add -l prints them)")
	}
	for i, l := range [][]string{s.Hosts, s.Keys, s.HostKeys} {
		for _, v := range l {
			if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "\x00\n") {
				return fmt.Errorf("ssh: %s: %q is empty or has a control character", []string{"hosts", "keys", "host_keys"}[i], v)
			}
		}
	}
	return nil
}
