package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/internal/progress"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type newOptions struct {
	vm.NewOptions
	profile string
	from    string
	timeout time.Duration
	// bwrap boxes (newbackend.go)
	backend, network, workdir string
}

func newNewCmd(e *env) *cobra.Command { return newNewCmdWith(e, runNew) }

// newNewCmdWith builds the verb around runF, so tests can check argv to options.
func newNewCmdWith(e *env, runF func(*env, *newOptions, []string) error) *cobra.Command {
	o := &newOptions{}
	cmd := &cobra.Command{
		Use:     "new --name NAME [--template T | --profile P | --from SRC[/SNAP]]",
		Short:   "make a box (vm, or bwrap with --backend bwrap) from a template, or clone one",
		GroupID: groupVM,
		Long: `Mint a persistent, isolated box on Incus from a template (default: blank), or clone
an existing box or one of its snapshots with --from.

The backend: --backend, else the --profile's, else the --from source's, else vm. With
--backend bwrap the box is a persistent bwrap sandbox: box run's isolation with a home
of its own, stamped with its profile (default $BOX_PROFILE, else "default"), template,
network tier (--network, default the profile's) and working directory (--workdir,
default the current one); see 'box help shell'. The vm-only flags (--cpu, --memory,
--disk, --vm, --container, --timeout) are refused for it, and --network and --workdir
for a vm box. A name is unique across both backends.

For a vm box:

The box is attached to the placement profile only ($` + vm.PlacementEnv + `, default
"` + vm.DefaultPlacement + `"): its NIC and root disk. Templates never choose the network.
The template's image, user and cloud-init user-data (verbatim) go into the box;
resources come from the flag, then the environment (BOX_CPU, BOX_MEMORY, BOX_DISK), then
the profile (--profile names a vm profile), then the template, then the defaults (` + vm.DefaultCPU + ` CPU, ` + vm.DefaultMemory + `, ` + vm.DefaultDisk + `). The template's metadata is
stamped on the box (user.box=1, user.box.template, user.box.user, ...), so shell and
exec never read the template again.

A clone (--from BOX or --from BOX/SNAPSHOT) keeps its source's stamp and resources and
records where it came from; it refuses --template, --profile, --vm/--container and the
resource flags. Every box gets its own machine ID: /etc/machine-id is emptied and
Debian's second copy (/var/lib/dbus/machine-id) made a link to it before the first
boot, so systemd makes a new one and clones never share a DHCP client identity.

A template's autostart (BOX_AUTOSTART) sets boot.autostart: the box comes back after a
host reboot. Its user-data's @RIG_REPO@ and @RIG_REF@ are resolved from $RIG_REPO and
$RIG_REF (default heavy-duty/rig and main) and stamped. A template naming a bootstrap
role (BOX_BOOTSTRAP_ROLE) is refused: box runs no rig role after a mint.

A fresh mint takes a snapshot named pristine once it is up (after cloud-init): 'box
restore BOX pristine' undoes everything since. It is skipped on a dir storage pool,
where a snapshot is a full copy of the disk ($BOX_SNAPSHOT_PRISTINE=1 takes it there
too, =0 never); a clone takes none of its own.

The launch is time-boxed (--timeout, else $BOX_LAUNCH_TIMEOUT in seconds): the box must
be running with an IPv4 lease, and cloud-init (when the template has user-data) must
have finished without error. On a terminal a progress line shows meanwhile (-q: none,
and no "ready" line). On failure the half-made box is deleted, except when only the
lease timed out (the box itself is fine then) and when cloud-init failed or did not
finish: the box is not handed over (exit 1), but kept, stopped, under its name, with
cloud-init's report, for you to inspect. An image without cloud-init cannot apply
user-data: box warns by name.`,
		Example: `  box new --name work                          # the blank template, as a VM
  box new --name agent --template claude --cpu 8
  box new --name scratch --container           # a container (where VMs cannot run)
  box new --name feature --from work/authed    # clone a snapshot, logged-in state and all
  box new --backend bwrap --name agent --template claude --network internet
  box new --name review --from agent/authed --workdir ~/src/other   # a bwrap clone`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var given []string
			cmd.Flags().Visit(func(f *pflag.Flag) { given = append(given, f.Name) })
			bwrap, err := newIsBwrap(e, o, given)
			if err != nil {
				return err
			}
			var be backend.Backend = vmBackend{e: e, mint: runF}
			if bwrap {
				be = e.bwrapBoxes()
			}
			return be.Mint(mintRequest(o, given))
		},
	}
	newBackendFlags(cmd, o)
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the new box's name (letters, digits, hyphens)")
	f.StringVar(&o.Template, "template", "", "the template (default: the profile's, else "+vm.DefaultTemplate+")")
	f.StringVar(&o.profile, "profile", "", "a box profile whose backend is vm: its template and resources apply")
	f.StringVar(&o.from, "from", "", "clone this box, or BOX/SNAPSHOT, instead of minting")
	f.StringVar(&o.CPU, "cpu", "", "CPU count (limits.cpu)")
	f.StringVar(&o.Memory, "memory", "", "memory, e.g. 8GiB (limits.memory)")
	f.StringVar(&o.Disk, "disk", "", "root disk size, e.g. 60GiB")
	f.BoolVar(&o.VM, "vm", false, "a virtual machine (the default)")
	f.BoolVar(&o.Container, "container", false, "a container instead of a VM")
	f.DurationVar(&o.timeout, "timeout", vm.DefaultLaunchTimeout, "give up when the box is not up within this time")
	_ = cmd.RegisterFlagCompletionFunc("from", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return boxNames(e, ""), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// newPlan is what box new will do, decided without incusd: a mint (Pool still to be
// read off the placement profile), or a clone.
type newPlan struct {
	mint  incus.Mint
	clone *incus.Clone
}

// planNew checks everything that can be checked without incusd: names, flags, the
// profile, the template, resource precedence.
func planNew(e *env, o *newOptions, given []string, now time.Time) (*newPlan, error) {
	if o.Name == "" {
		return nil, usagef("run 'box new --help' for usage", "box new needs --name NAME")
	}
	if err := incus.ValidateName(o.Name); err != nil {
		return nil, usagef("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	if v := e.getenv(vm.EnvLaunchTimeout); v != "" && !slices.Contains(given, "timeout") {
		d, err := launchTimeout(v)
		if err != nil {
			return nil, err
		}
		o.timeout = d
	}
	if o.timeout <= 0 {
		return nil, usagef("for example --timeout 10m", "--timeout must be positive")
	}
	o.FromEnv(e.getenv)
	placement := vm.Placement(e.getenv)
	if o.from != "" {
		if err := vm.CloneRefusals(given); err != nil {
			return nil, vmErr(e, err)
		}
		// Refused by name, not silently dropped: the scripting form of the resource
		// flags does not reach a clone, which keeps its source's resources.
		for _, kv := range [][2]string{{vm.EnvCPU, o.EnvCPU}, {vm.EnvMemory, o.EnvMemory}, {vm.EnvDisk, o.EnvDisk}} {
			if kv[1] != "" {
				note(e, "%s=%s is not applied to a clone: it keeps its source's resources ('box incus %s -- config set limits.*' changes them)", kv[0], kv[1], o.Name)
			}
		}
		src, snap, err := vm.ParseFrom(o.from)
		if err != nil {
			return nil, vmErr(e, err)
		}
		return &newPlan{clone: &incus.Clone{Name: o.Name, From: src, Snapshot: snap, Profile: placement, Created: now}}, nil
	}
	var prof *profiles.Profile
	if o.profile != "" {
		p, err := profiles.Load(o.profile, profiles.Dir(e.configHome()))
		if err != nil {
			if errors.Is(err, profiles.ErrNotFound) || profiles.ValidName(o.profile) != nil {
				return nil, usagef("run 'box profiles' to list them", "%s", err)
			}
			return nil, err
		}
		prof = p
	}
	if err := vm.CheckProfile(prof); err != nil {
		return nil, vmErr(e, err)
	}
	name := vm.TemplateName(o.Template, prof)
	tmpl, err := templates.Load(name, templates.Dir(e.configHome()))
	if err != nil {
		if errors.Is(err, templates.ErrNotFound) || templates.ValidName(name) != nil {
			return nil, usagef("run 'box templates' to list them", "%s", err)
		}
		var h interface{ Hint() string }
		if errors.As(err, &h) {
			return nil, err
		}
		return nil, withHint(err, "fix or remove the template named above")
	}
	if _, _, err := vm.PristinePolicy(e.getenv(vm.EnvSnapshotPristine), ""); err != nil {
		return nil, err
	}
	if err := profiles.CheckKeys(profiles.UseVM, prof, tmpl); err != nil {
		return nil, err
	}
	mint, err := vm.MintPlan(o.NewOptions, prof, tmpl, placement, "", now)
	if err != nil {
		return nil, vmErr(e, err)
	}
	if note := vm.PidsNote(prof, mint.VM); note != "" {
		fmt.Fprintf(e.stderr, "box: warning: %s\n", note)
	}
	return &newPlan{mint: mint}, nil
}

// runNew is the vm backend's box new: it plans, checks the name and the source, and
// hands the launch to backend/vm.
func runNew(e *env, o *newOptions, given []string) error {
	plan, err := planNew(e, o, given, time.Now())
	if err != nil {
		return err
	}
	mint := plan.mint

	ctx, stop := vmContext()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	c := e.client()
	defer c.Close()
	p := newProgress(e)
	defer p.Done()

	if _, _, err := c.Instance(ctx, o.Name); err == nil {
		return withHint(fmt.Errorf("an instance named %q already exists", o.Name), "pick another --name; 'box list' shows the boxes")
	} else if !incus.IsNotFound(err) {
		return vmErr(e, err)
	}

	l := vm.Launch{Name: o.Name, Clone: plan.clone != nil, Timeout: o.timeout, Pristine: e.getenv(vm.EnvSnapshotPristine)}
	if cl := plan.clone; cl != nil {
		if _, err := resolve(ctx, e, c, cl.From); err != nil {
			return err
		}
		if cl.Snapshot != "" {
			if err := needSnapshot(ctx, e, c, cl.From, cl.Snapshot); err != nil {
				return err
			}
		}
		if l.Req, err = incus.CloneRequest(*cl); err != nil {
			return vmErr(e, err)
		}
		p.Step("cloning %s into %s", o.from, o.Name)
	} else {
		if mint.Pool, err = placementPool(ctx, e, c, vm.Placement(e.getenv)); err != nil {
			return err
		}
		l.Pool = mint.Pool
		if l.Req, err = incus.MintRequest(mint); err != nil {
			return vmErr(e, err)
		}
		kind := "container"
		if mint.VM {
			kind = "VM"
		}
		p.Step("creating %s (%s, template %s, image %s)", o.Name, kind, mint.Template, mint.Image)
	}
	res, err := vm.Run(ctx, c, l, vmReporter(e, p))
	if err != nil {
		return launchErr(e, o, err)
	}
	p.Done()
	s := vm.Summarize(res.Inst, nil)
	note(e, "%s is ready (%s, %s, user %s, %s): box shell %s",
		o.Name, s.Type, res.IPv4, s.User, p.Elapsed().Round(100*time.Millisecond), o.Name)
	return nil
}

// vmReporter is how backend/vm speaks: the verb's progress line, warnings and notes.
func vmReporter(e *env, p *progress.Line) vm.Reporter {
	return vm.Reporter{
		Progress: p,
		Warn:     func(format string, a ...any) { fmt.Fprintf(e.stderr, "box: warning: "+format+"\n", a...) },
		Note:     func(format string, a ...any) { note(e, format, a...) },
	}
}

// launchTimeout reads $BOX_LAUNCH_TIMEOUT: whole seconds (upstream's form), or a
// duration such as 10m.
func launchTimeout(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, usagef("for example BOX_LAUNCH_TIMEOUT=600 (seconds) or 10m", "%s=%q: want a positive number of seconds or a duration", vm.EnvLaunchTimeout, v)
}

// launchErr words a failed launch: a step that failed (the box was removed), or a box
// kept on purpose (its lease or cloud-init did not come), which says so itself.
func launchErr(e *env, o *newOptions, err error) error {
	var le *vm.Error
	if !errors.As(err, &le) {
		return vmErr(e, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return withHint(fmt.Errorf("could not %s box %q within %s; it was removed", le.What, o.Name, o.timeout), "a first launch may fetch the image: try a longer --timeout")
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: box %q was removed", o.Name)
	}
	return vmErr(e, err)
}

// needSnapshot checks that box has the snapshot (vm.Backend.NeedSnapshot).
func needSnapshot(ctx context.Context, e *env, c *incus.Client, box, snap string) error {
	return vmBackend{e: e}.vm().NeedSnapshot(ctx, c, box, snap)
}
