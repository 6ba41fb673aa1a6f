package profiles

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/templates"
)

// Use is the backend a profile and template are used with; bwrap boxes are told apart
// from box run's throwaway sandboxes, since they keep their own login.
type Use string

const (
	UseRun Use = "bwrap"     // box run
	UseBox Use = "bwrap box" // a persistent bwrap box (box new --backend bwrap)
	UseVM  Use = "vm"
)

// what a use does with a key that is set.
type honour int

const (
	undecided honour = iota // a hole in a table: refused, and TestKeyTablesComplete fails
	honoured
	refused   // an error naming the key, the file and the backend
	otherForm // a template key describing the box for the other backend: allowed, unused
)

// The uses as indexes of a keyRule's arrays: arrays, not maps, so that the key tables
// below are static data rather than ninety maps every box start-up builds (issue 24).
const (
	iRun = iota
	iBox
	iVM
	nUses
)

// index is use's slot in a keyRule; false for a use box does not know.
func (u Use) index() (int, bool) {
	switch u {
	case UseRun:
		return iRun, true
	case UseBox:
		return iBox, true
	case UseVM:
		return iVM, true
	}
	return 0, false
}

// keyRule is one key and what each use does with it; why says, for a refusal, what to
// do instead.
type keyRule struct {
	key string
	by  [nUses]honour
	why [nUses]string
}

// refuses: the use at index u refuses the key, or the table has no decision for it.
func (r keyRule) refuses(u int) bool { return r.by[u] == refused || r.by[u] == undecided }

func all(h honour) [nUses]honour { return [nUses]honour{iRun: h, iBox: h, iVM: h} }

func bwrapOnly(vmWhy string) keyRule {
	return keyRule{by: [nUses]honour{iRun: honoured, iBox: honoured, iVM: refused}, why: [nUses]string{iVM: vmWhy}}
}

func vmOnly(bwrapWhy string) keyRule {
	return keyRule{by: [nUses]honour{iRun: refused, iBox: refused, iVM: honoured},
		why: [nUses]string{iRun: bwrapWhy, iBox: bwrapWhy}}
}

func named(k string, r keyRule) keyRule { r.key = k; return r }

// ProfileKeys is what each backend does with each profile key: the one place that says
// it. description, backend and template are honoured by all.
var ProfileKeys = []keyRule{
	named("description", keyRule{by: all(honoured)}),
	named("backend", keyRule{by: all(honoured)}),
	named("template", keyRule{by: all(honoured)}),
	// A vm box's network is the box bridge: the public internet only. "none" would need
	// a per-box ACL that is not built: refused rather than ignored.
	named("network", keyRule{by: [nUses]honour{iRun: honoured, iBox: honoured, iVM: refused}, why: [nUses]string{iVM: `a vm box always has the box bridge's network (the public internet only); remove network, or set network = "internet"`}}),
	named("env", bwrapOnly("box exec and box shell pass no host variables into a vm box; set them inside the box")),
	named("mounts", bwrapOnly("a vm box mounts nothing of the host; copy files in (for example: tar -c . | box exec BOX -- tar -x)")),
	named("tools", bwrapOnly("a vm box's tools come from its image and the template's user-data")),
	named("command", bwrapOnly("box shell opens the vm box user's login shell; run a command with box exec BOX -- COMMAND")),
	named("auth_passthrough", keyRule{by: [nUses]honour{iRun: honoured, iBox: refused, iVM: refused},
		why: [nUses]string{iBox: "a bwrap box keeps its own login: log in inside it", iVM: "a vm box is creds-free: log in inside it"}}),
	// Nix packages and the PATH shape a bwrap sandbox (Validate refuses them in a vm
	// profile already, at parse time).
	named("packages", bwrapOnly("a vm box installs its tools itself: use the template's cloud-init")),
	named("path", bwrapOnly("path shapes a bwrap sandbox's PATH")),
	named("nix", bwrapOnly("nix shapes a bwrap sandbox's Nix store")),
	named("allow", bwrapOnly("a vm box's network is the box bridge's; the allowlist tier is a bwrap sandbox's")),
	named("protect_add", bwrapOnly("the protected set shapes a bwrap sandbox's binds; a vm box shares no directory with the host")),
	named("protect_drop", bwrapOnly("the protected set shapes a bwrap sandbox's binds; a vm box shares no directory with the host")),
	named("sockets", bwrapOnly("a vm box shares no socket with the host")),
	named("ssh", bwrapOnly("box's filtering ssh-agent serves a bwrap sandbox; a vm box has no agent of the host")),
	named("publish", bwrapOnly("a vm box's ports are published with box expose BOX PORT")),
	named("host_ports", bwrapOnly("a vm box reaches no host port; publish the box's port with box expose instead")),
	named("syscalls", bwrapOnly("the syscall filter is the bwrap sandbox's; a vm box has its own kernel")),
	// Resources bound both: a sandbox through a cgroup or rlimits, a vm box as Incus
	// limits (pids: limits.processes on a container; a VM's own kernel bounds it, said
	// at mint).
	named("cpu", keyRule{by: all(honoured)}),
	named("memory", keyRule{by: all(honoured)}),
	named("pids", keyRule{by: all(honoured)}),
	named("git_identity", bwrapOnly("a vm box gets no identity from the host: set it inside with git config --global")),
	named("isolation", bwrapOnly("a vm box is isolated by its own kernel; remove isolation")),
	named("devshell", bwrapOnly("a vm box's tools come from its image and the template's user-data")),
	named("disk", vmOnly("a bwrap sandbox has no disk of its own (the working directory is the host's); use a vm profile for a disk size")),
}

// TemplateKeys is what each backend does with each template key. A template describes a
// box for both backends (the vm image and user, the bwrap tools and agent), so the
// other backend's keys are allowed; keys that would promise something the backend in
// use cannot do are refused.
var TemplateKeys = []keyRule{
	named("description", keyRule{by: all(honoured)}),
	named("image", vmForm()), named("user", vmForm()), named("cpu", vmForm()), named("memory", vmForm()),
	named("disk", vmForm()), named("user_data", vmForm()),
	named("require_vm", vmOnly("a bwrap sandbox is not a virtual machine; use a vm profile (box new --backend vm)")),
	// autostart: box new sets boot.autostart. bootstrap_role: box runs no rig role after
	// a mint; for vm the mint plan refuses it by name (boxes.RoleError, one refusal).
	named("autostart", keyRule{by: [nUses]honour{iRun: refused, iBox: refused, iVM: honoured}, why: [nUses]string{
		iRun: "a bwrap sandbox runs only while its command does", iBox: "a bwrap box runs only while box shell or box exec does"}}),
	named("bootstrap_role", keyRule{by: [nUses]honour{iRun: refused, iBox: refused, iVM: honoured}, why: [nUses]string{
		iRun: "a bwrap sandbox has no bootstrap", iBox: "a bwrap box has no bootstrap"}}),
	named("tools", bwrapForm()), named("command", bwrapForm()), named("notes", bwrapForm()), named("agent", bwrapForm()),
}

func vmForm() keyRule {
	return keyRule{by: [nUses]honour{iRun: otherForm, iBox: otherForm, iVM: honoured}}
}

func bwrapForm() keyRule {
	return keyRule{by: [nUses]honour{iRun: honoured, iBox: honoured, iVM: otherForm}}
}

// profileSet reports whether p sets key (to something other than its default).
func profileSet(p *Profile, key string) bool {
	switch key {
	case "network":
		return p.Network != ""
	case "env":
		return len(p.Env) > 0
	case "mounts":
		return len(p.Mounts) > 0
	case "tools":
		return len(p.Tools) > 0
	case "command":
		return len(p.Command) > 0
	case "auth_passthrough":
		return p.AuthPassthrough
	case "packages":
		return len(p.Packages) > 0
	case "path":
		return p.Path != "" && p.Path != PathSystem
	case "nix":
		return p.Nix != "" && p.Nix != NixNone
	case "cpu":
		return p.CPU != ""
	case "memory":
		return p.Memory != ""
	case "disk":
		return p.Disk != ""
	case "publish":
		return len(p.Publish) > 0
	case "host_ports":
		return len(p.HostPorts) > 0
	case "sockets":
		return len(p.Sockets) > 0
	case "ssh":
		return p.SSH != nil
	case "git_identity":
		return p.GitIdentity != nil
	case "isolation":
		return p.Isolation != ""
	case "devshell":
		return p.DevShell != ""
	}
	return false
}

func templateSet(t *templates.Template, key string) bool {
	switch key {
	case "require_vm":
		return t.RequireVM
	case "autostart":
		return t.Autostart
	case "bootstrap_role":
		return t.BootstrapRole != ""
	}
	return false // the other keys are honoured or allowed by every use
}

// KeyError is a key set in a profile or template that the backend in use does not honour.
type KeyError struct {
	Key, File, Backend, Why string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("%s sets %s, which the %s backend does not honour", e.File, e.Key, e.Backend)
}

// Hint says what to do instead.
func (e *KeyError) Hint() string { return e.Why + "; or remove " + e.Key + " from " + e.File }

// UnknownUseError: CheckKeys was asked about a use it has no column for; it refuses
// rather than honour every key.
type UnknownUseError struct{ Use Use }

func (e *UnknownUseError) Error() string {
	return fmt.Sprintf("no key rules for the use %q", string(e.Use))
}

// CheckKeys refuses any key of p or t (either may be nil) that use does not honour.
func CheckKeys(use Use, p *Profile, t *templates.Template) error {
	u, ok := use.index()
	if !ok {
		return &UnknownUseError{Use: use}
	}
	if p != nil {
		for _, r := range ProfileKeys {
			if r.refuses(u) && profileSet(p, r.key) && !vmInternet(use, p, r.key) {
				return &KeyError{Key: r.key, File: profileFile(p), Backend: string(use), Why: r.why[u]}
			}
		}
	}
	if t != nil {
		for _, r := range TemplateKeys {
			if r.refuses(u) && templateSet(t, r.key) {
				key := r.key
				if strings.HasSuffix(t.File, templates.ManifestEnv) {
					key = "BOX_" + strings.ToUpper(key)
				}
				return &KeyError{Key: key, File: templateFile(t), Backend: string(use), Why: r.why[u]}
			}
		}
	}
	return nil
}

// vmInternet: network = "internet" is what a vm box has, so it is honoured.
func vmInternet(use Use, p *Profile, key string) bool {
	return use == UseVM && key == "network" && p.Network == vmNetwork
}

func profileFile(p *Profile) string {
	if p.Source == "built-in" || p.Source == "" {
		return fmt.Sprintf("built-in profile %q", p.Name)
	}
	return fmt.Sprintf("profile %q (%s)", p.Name, p.Source)
}

func templateFile(t *templates.Template) string {
	if t.File == "" || t.Source == "built-in" {
		return fmt.Sprintf("built-in template %q", t.Name)
	}
	return fmt.Sprintf("template %q (%s)", t.Name, filepath.Clean(t.File))
}
