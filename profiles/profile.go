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
)

// Tiers lists the network tiers in order of exposure.
var Tiers = policy.Tiers

// Profile is one parsed, validated profile.
type Profile struct {
	Name   string `toml:"-"`
	Source string `toml:"-"` // "built-in" or the file it came from

	Description     string   `toml:"description"`
	Backend         string   `toml:"backend"`
	Template        string   `toml:"template"`
	Network         string   `toml:"network"`
	Env             []string `toml:"env"`
	Mounts          []Mount  `toml:"mounts"`
	Tools           []string `toml:"tools"`
	Command         []string `toml:"command"`
	AuthPassthrough bool     `toml:"auth_passthrough"`
	CPU             string   `toml:"cpu"`
	Memory          string   `toml:"memory"`
	Disk            string   `toml:"disk"`
}

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

// ValidNetwork checks a network tier name.
func ValidNetwork(n string) error {
	for _, t := range Tiers {
		if n == t {
			return nil
		}
	}
	return fmt.Errorf("network %q: want one of %s", n, strings.Join(Tiers, ", "))
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
			p.Network = NetInternet
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
	if err := ValidNetwork(p.Network); err != nil {
		return err
	}
	if p.Backend == BackendVM && p.Network == NetFull {
		return fmt.Errorf("network %q is for the bwrap backend only: a vm box is always isolated", p.Network)
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
	return nil
}
