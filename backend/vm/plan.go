package vm

import (
	"fmt"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

// Defaults of a mint, when neither a flag, the profile nor the template sets a value
// (the upstream tool's: 4 CPU / 8GiB / 60GiB).
const (
	DefaultTemplate = "blank"
	DefaultCPU      = "4"
	DefaultMemory   = "8GiB"
	DefaultDisk     = "60GiB"

	// PlacementEnv names the environment variable that chooses the placement profile
	// (NIC + root disk, owned by the host stack); DefaultPlacement is its default.
	PlacementEnv     = "BOX_PLACEMENT_PROFILE"
	DefaultPlacement = "box-net"
)

// The environment's stand-ins for the resource flags (the scripting form, as upstream
// documents them): below the flags, above the profile, the template and the defaults.
const (
	EnvCPU    = "BOX_CPU"
	EnvMemory = "BOX_MEMORY"
	EnvDisk   = "BOX_DISK"
	// EnvLaunchTimeout stands in for --timeout: seconds, or a duration such as 10m.
	EnvLaunchTimeout = "BOX_LAUNCH_TIMEOUT"
	// EnvRigRepo and EnvRigRef resolve a template's @RIG_REPO@ and @RIG_REF@ tokens.
	EnvRigRepo = "RIG_REPO"
	EnvRigRef  = "RIG_REF"
)

// Defaults of the rig pin tokens, upstream's.
const (
	DefaultRigRepo = "heavy-duty/rig"
	DefaultRigRef  = "main"
)

// NewOptions is what `box new` was asked, flags as given ("" when not given), and the
// environment variables that stand in for flags.
type NewOptions struct {
	Name      string
	Template  string
	CPU       string
	Memory    string
	Disk      string
	VM        bool // --vm
	Container bool // --container

	// From the environment: BOX_CPU, BOX_MEMORY, BOX_DISK, RIG_REPO, RIG_REF.
	EnvCPU, EnvMemory, EnvDisk string
	RigRepo, RigRef            string
}

// FromEnv fills the environment's fields of o with getenv.
func (o *NewOptions) FromEnv(getenv func(string) string) {
	o.EnvCPU, o.EnvMemory, o.EnvDisk = getenv(EnvCPU), getenv(EnvMemory), getenv(EnvDisk)
	o.RigRepo, o.RigRef = getenv(EnvRigRepo), getenv(EnvRigRef)
}

// UsageError is a mistake in how box was asked (the CLI exits 2).
type UsageError struct{ Msg, HintText string }

func (e *UsageError) Error() string { return e.Msg }
func (e *UsageError) Hint() string  { return e.HintText }

func usage(hint, format string, a ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, a...), HintText: hint}
}

// TemplateName is the template a mint uses: --template, else the profile's, else blank.
func TemplateName(flag string, prof *profiles.Profile) string {
	switch {
	case flag != "":
		return flag
	case prof != nil && prof.Template != "":
		return prof.Template
	}
	return DefaultTemplate
}

// ProfileBackendError: a vm verb was given a profile of another backend (a usage error).
type ProfileBackendError struct{ Profile, Backend string }

func (e *ProfileBackendError) Error() string {
	return fmt.Sprintf("profile %q is for the %s backend, not vm", e.Profile, e.Backend)
}

// NoImageError: a vm mint from a template with no image, a bwrap template (a usage error).
type NoImageError struct{ Template string }

func (e *NoImageError) Error() string {
	return fmt.Sprintf("template %q has no image: it is for the bwrap backend only", e.Template)
}

// CheckProfile refuses a profile that is not for the vm backend.
func CheckProfile(prof *profiles.Profile) error {
	if prof != nil && prof.Backend != profiles.BackendVM {
		return &errs.UsageError{Err: &ProfileBackendError{Profile: prof.Name, Backend: prof.Backend}}
	}
	return nil
}

// Resource is one resolved value and where it came from (flag, profile, template,
// default), for messages.
type Resource struct{ Value, From string }

// Resources resolves CPU, memory and disk: the flag, then the environment (BOX_CPU,
// BOX_MEMORY, BOX_DISK), then the profile, then the template, then the defaults. Flag
// and environment values are validated like template values.
func Resources(o NewOptions, prof *profiles.Profile, tmpl *templates.Template) (cpu, memory, disk Resource, err error) {
	for _, c := range []struct{ name, v string }{{"--cpu", o.CPU}, {EnvCPU, o.EnvCPU}} {
		if c.v != "" {
			if err := templates.ValidCPU(c.v); err != nil {
				return cpu, memory, disk, usage(c.name+" takes a count, e.g. 4", "%s: %s", c.name, err)
			}
		}
	}
	for _, f := range []struct{ name, what, v string }{{"--memory", "memory", o.Memory}, {"--disk", "disk", o.Disk},
		{EnvMemory, "memory", o.EnvMemory}, {EnvDisk, "disk", o.EnvDisk}} {
		if f.v != "" {
			if err := templates.ValidSize(f.what, f.v); err != nil {
				return cpu, memory, disk, usage("sizes look like 8GiB or 512MiB", "%s: %s", f.name, err)
			}
		}
	}
	pick := func(flag, env, fromProfile, fromTemplate, def string) Resource {
		switch {
		case flag != "":
			return Resource{flag, "flag"}
		case env != "":
			return Resource{env, "environment"}
		case fromProfile != "":
			return Resource{fromProfile, "profile"}
		case fromTemplate != "":
			return Resource{fromTemplate, "template"}
		}
		return Resource{def, "default"}
	}
	var p profiles.Profile
	if prof != nil {
		p = *prof
	}
	var t templates.Template
	if tmpl != nil {
		t = *tmpl
	}
	return pick(o.CPU, o.EnvCPU, p.CPU, t.CPU, DefaultCPU), pick(o.Memory, o.EnvMemory, p.Memory, t.Memory, DefaultMemory),
		pick(o.Disk, o.EnvDisk, p.Disk, t.Disk, DefaultDisk), nil
}

// WantVM decides the instance type: a VM unless --container; both flags, or a template
// that requires a VM asked for as a container, are usage errors.
func WantVM(o NewOptions, tmpl *templates.Template) (bool, error) {
	if o.VM && o.Container {
		return false, usage("pick one", "--vm and --container exclude each other")
	}
	if o.Container && tmpl != nil && tmpl.RequireVM {
		return false, usage("drop --container: this template needs a virtual machine",
			"template %q requires a VM (BOX_REQUIRE_VM), but --container was given", tmpl.Name)
	}
	return !o.Container, nil
}

// MintPlan turns the options, the vm profile (or nil), the loaded template, the
// placement profile and its root pool into the mint. It is pure.
func MintPlan(o NewOptions, prof *profiles.Profile, tmpl *templates.Template, placement, pool string, now time.Time) (incus.Mint, error) {
	if err := incus.ValidateName(o.Name); err != nil {
		return incus.Mint{}, usage("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	if err := CheckProfile(prof); err != nil {
		return incus.Mint{}, err
	}
	if tmpl.Image == "" {
		return incus.Mint{}, &errs.UsageError{Err: &NoImageError{Template: tmpl.Name}}
	}
	if tmpl.User == "" {
		return incus.Mint{}, fmt.Errorf("template %q has an image but no user", tmpl.Name)
	}
	if tmpl.BootstrapRole != "" {
		return incus.Mint{}, &RoleError{Template: tmpl.Name, Role: tmpl.BootstrapRole}
	}
	vm, err := WantVM(o, tmpl)
	if err != nil {
		return incus.Mint{}, err
	}
	cpu, mem, disk, err := Resources(o, prof, tmpl)
	if err != nil {
		return incus.Mint{}, err
	}
	userData, repo, ref, err := RenderUserData(tmpl.UserData, o.RigRepo, o.RigRef)
	if err != nil {
		return incus.Mint{}, err
	}
	m := incus.Mint{
		Name: o.Name, VM: vm, Profile: placement, Image: tmpl.Image,
		CPU: cpu.Value, Memory: mem.Value, Disk: disk.Value, Pool: pool,
		UserData: userData, Template: tmpl.Name, User: tmpl.User, Created: now,
		Autostart: tmpl.Autostart, RigRepo: repo, RigRef: ref,
	}
	if !vm {
		// A container shares the host's kernel and its pid table: bounded like a sandbox.
		m.Processes = profiles.DefaultPids
		if prof != nil && prof.Pids != nil {
			m.Processes = *prof.Pids
		}
		// And a host uid range of its own: a shared one makes every box's root the same
		// host user (see incus.KeyIsolatedIDs; the drill's sibling:fds-in-flight).
		m.IsolatedIDs = !protectionOff(ProtIsolatedIDs)
	}
	return m, nil
}

// PidsNote is the warning for a profile's pids that a VM does not take: Incus's
// limits.processes is for containers; a VM's own kernel bounds its processes, and the
// host's pid table is not shared. "" when there is nothing to say.
func PidsNote(prof *profiles.Profile, vm bool) string {
	if !vm || prof == nil || prof.Pids == nil {
		return ""
	}
	return fmt.Sprintf("profile %q: pids = %d is not applied to a VM (limits.processes is for containers; the VM's own kernel bounds its processes)", prof.Name, *prof.Pids)
}

// RoleError refuses a template that names a bootstrap role (BOX_BOOTSTRAP_ROLE,
// bootstrap_role): upstream ran 'rig bootstrap ROLE' in the box after cloud-init; box
// runs nothing of rig's, and will not mint a box that lacks what its template promised.
type RoleError struct{ Template, Role string }

func (e *RoleError) Error() string {
	return fmt.Sprintf("template %q names a bootstrap role (BOX_BOOTSTRAP_ROLE=%s): box does not run rig roles after a mint", e.Template, e.Role)
}

// The rig pin tokens of upstream's user-data, resolved at mint.
const (
	TokenRigRepo = "@RIG_REPO@"
	TokenRigRef  = "@RIG_REF@"
)

// RenderUserData resolves the rig pin tokens in user-data, upstream's one substitution:
// @RIG_REPO@ from $RIG_REPO (default heavy-duty/rig, owner/repo), @RIG_REF@ from $RIG_REF
// (default main, a plain ref name). The values are checked before they touch the YAML:
// they land in a shell line in the box. Without tokens, user-data passes verbatim and
// repo and ref come back empty (nothing to stamp).
func RenderUserData(data, repo, ref string) (out, usedRepo, usedRef string, err error) {
	if !strings.Contains(data, TokenRigRepo) && !strings.Contains(data, TokenRigRef) {
		return data, "", "", nil
	}
	if repo == "" {
		repo = DefaultRigRepo
	}
	if ref == "" {
		ref = DefaultRigRef
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !rigName(owner, "") || !rigName(name, "") {
		return "", "", "", usage("for example RIG_REPO=heavy-duty/rig", "%s=%q: want owner/repo (letters, digits, '.', '_', '-')", EnvRigRepo, repo)
	}
	if !rigName(ref, "/") {
		return "", "", "", usage("for example RIG_REF=main", "%s=%q: want a plain ref name (letters, digits, '.', '_', '/', '-')", EnvRigRef, ref)
	}
	out = strings.ReplaceAll(data, TokenRigRepo, repo)
	return strings.ReplaceAll(out, TokenRigRef, ref), repo, ref, nil
}

func rigName(s, extra string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-"+extra, r)) {
			return false
		}
	}
	return true
}

// CloneRefusals refuses the settings a clone cannot honour (a backend.SettingsError,
// worded by the CLI): what is in the box and its resources come from the source, not
// from a template, a profile or a flag. given lists the settings the user gave.
func CloneRefusals(given []string) error {
	return backend.RefuseSettings(given, profiles.BackendVM, true, "template", "profile", "cpu", "memory", "disk", "vm", "container")
}

// Placement is the placement profile's name: $BOX_PLACEMENT_PROFILE, else box-net.
func Placement(getenv func(string) string) string {
	if p := strings.TrimSpace(getenv(PlacementEnv)); p != "" {
		return p
	}
	return DefaultPlacement
}

// DefaultLaunchTimeout time-boxes a launch (create, start, lease, cloud-init), as
// upstream's 600 s: the default of box new --timeout.
const DefaultLaunchTimeout = 600 * time.Second
