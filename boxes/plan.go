package boxes

import (
	"fmt"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
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

// NewOptions is what `box new` was asked, flags as given ("" when not given).
type NewOptions struct {
	Name      string
	Template  string
	CPU       string
	Memory    string
	Disk      string
	VM        bool // --vm
	Container bool // --container
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

// CheckProfile refuses a profile that is not for the vm backend.
func CheckProfile(prof *profiles.Profile) error {
	if prof != nil && prof.Backend != profiles.BackendVM {
		return usage("box new takes a profile whose backend is vm; bwrap profiles are for 'box run'",
			"profile %q is for the %s backend, not vm", prof.Name, prof.Backend)
	}
	return nil
}

// Resource is one resolved value and where it came from (flag, profile, template,
// default), for messages.
type Resource struct{ Value, From string }

// Resources resolves CPU, memory and disk: the flag, then the profile, then the
// template, then the defaults. Flag values are validated like template values.
func Resources(o NewOptions, prof *profiles.Profile, tmpl *templates.Template) (cpu, memory, disk Resource, err error) {
	if o.CPU != "" {
		if err := templates.ValidCPU(o.CPU); err != nil {
			return cpu, memory, disk, usage("--cpu takes a count, e.g. --cpu 4", "--cpu: %s", err)
		}
	}
	for _, f := range []struct{ flag, v string }{{"memory", o.Memory}, {"disk", o.Disk}} {
		if f.v != "" {
			if err := templates.ValidSize(f.flag, f.v); err != nil {
				return cpu, memory, disk, usage("sizes look like 8GiB or 512MiB", "--%s: %s", f.flag, err)
			}
		}
	}
	pick := func(flag, fromProfile, fromTemplate, def string) Resource {
		switch {
		case flag != "":
			return Resource{flag, "flag"}
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
	return pick(o.CPU, p.CPU, t.CPU, DefaultCPU), pick(o.Memory, p.Memory, t.Memory, DefaultMemory),
		pick(o.Disk, p.Disk, t.Disk, DefaultDisk), nil
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
		return incus.Mint{}, usage("run 'box templates' to list them; a vm template sets image and user",
			"template %q has no image: it is for the bwrap backend only", tmpl.Name)
	}
	if tmpl.User == "" {
		return incus.Mint{}, fmt.Errorf("template %q has an image but no user", tmpl.Name)
	}
	vm, err := WantVM(o, tmpl)
	if err != nil {
		return incus.Mint{}, err
	}
	cpu, mem, disk, err := Resources(o, prof, tmpl)
	if err != nil {
		return incus.Mint{}, err
	}
	return incus.Mint{
		Name: o.Name, VM: vm, Profile: placement, Image: tmpl.Image,
		CPU: cpu.Value, Memory: mem.Value, Disk: disk.Value, Pool: pool,
		UserData: tmpl.UserData, Template: tmpl.Name, User: tmpl.User, Created: now,
	}, nil
}

// ParseFrom splits --from SRC[/SNAP] and validates both names.
func ParseFrom(from string) (src, snap string, err error) {
	src, snap, hasSnap := strings.Cut(from, "/")
	if err := incus.ValidateName(src); err != nil {
		return "", "", usage("--from takes BOX or BOX/SNAPSHOT", "--from: %s", err)
	}
	if hasSnap {
		if err := incus.ValidateSnapshotName(snap); err != nil {
			return "", "", usage("--from takes BOX or BOX/SNAPSHOT", "--from: %s", err)
		}
	}
	return src, snap, nil
}

// CloneRefusals refuses flags a clone cannot honour: what is in the box and its
// resources come from the source, not from a template, a profile or a flag.
// given lists the names of the flags the user set.
func CloneRefusals(given []string) error {
	var bad []string
	for _, f := range given {
		switch f {
		case "template", "profile", "cpu", "memory", "disk", "vm", "container":
			bad = append(bad, "--"+f)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return usage("a clone is a copy of its source: drop "+strings.Join(bad, " ")+", or mint a new box without --from",
		"--from cannot be combined with %s", strings.Join(bad, ", "))
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
