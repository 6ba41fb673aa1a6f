package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/boxes"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type newOptions struct {
	boxes.NewOptions
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

The box is attached to the placement profile only ($` + boxes.PlacementEnv + `, default
"` + boxes.DefaultPlacement + `"): its NIC and root disk. Templates never choose the network.
The template's image, user and cloud-init user-data (verbatim) go into the box;
resources come from the flag, then the environment (BOX_CPU, BOX_MEMORY, BOX_DISK), then
the profile (--profile names a vm profile), then the template, then the defaults (` + boxes.DefaultCPU + ` CPU, ` + boxes.DefaultMemory + `, ` + boxes.DefaultDisk + `). The template's metadata is
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
			if bwrap, err := newIsBwrap(e, o, given); err != nil || bwrap {
				if err != nil {
					return err
				}
				return bwrapBackend{e}.Mint(o, given)
			}
			return runF(e, o, given)
		},
	}
	newBackendFlags(cmd, o)
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the new box's name (letters, digits, hyphens)")
	f.StringVar(&o.Template, "template", "", "the template (default: the profile's, else "+boxes.DefaultTemplate+")")
	f.StringVar(&o.profile, "profile", "", "a box profile whose backend is vm: its template and resources apply")
	f.StringVar(&o.from, "from", "", "clone this box, or BOX/SNAPSHOT, instead of minting")
	f.StringVar(&o.CPU, "cpu", "", "CPU count (limits.cpu)")
	f.StringVar(&o.Memory, "memory", "", "memory, e.g. 8GiB (limits.memory)")
	f.StringVar(&o.Disk, "disk", "", "root disk size, e.g. 60GiB")
	f.BoolVar(&o.VM, "vm", false, "a virtual machine (the default)")
	f.BoolVar(&o.Container, "container", false, "a container instead of a VM")
	f.DurationVar(&o.timeout, "timeout", boxes.DefaultLaunchTimeout, "give up when the box is not up within this time")
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
	if v := e.getenv(boxes.EnvLaunchTimeout); v != "" && !slices.Contains(given, "timeout") {
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
	placement := boxes.Placement(e.getenv)
	if o.from != "" {
		if err := boxes.CloneRefusals(given); err != nil {
			return nil, vmErr(e, err)
		}
		// Refused by name, not silently dropped: the scripting form of the resource
		// flags does not reach a clone, which keeps its source's resources.
		for _, kv := range [][2]string{{boxes.EnvCPU, o.EnvCPU}, {boxes.EnvMemory, o.EnvMemory}, {boxes.EnvDisk, o.EnvDisk}} {
			if kv[1] != "" {
				note(e, "%s=%s is not applied to a clone: it keeps its source's resources ('box incus %s -- config set limits.*' changes them)", kv[0], kv[1], o.Name)
			}
		}
		src, snap, err := boxes.ParseFrom(o.from)
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
	if err := boxes.CheckProfile(prof); err != nil {
		return nil, vmErr(e, err)
	}
	name := boxes.TemplateName(o.Template, prof)
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
	if _, _, err := pristinePolicy(e.getenv(envSnapshotPristine), ""); err != nil {
		return nil, err
	}
	if err := profiles.CheckKeys(profiles.UseVM, prof, tmpl); err != nil {
		return nil, err
	}
	mint, err := boxes.MintPlan(o.NewOptions, prof, tmpl, placement, "", now)
	if err != nil {
		return nil, vmErr(e, err)
	}
	if note := boxes.PidsNote(prof, mint.VM); note != "" {
		fmt.Fprintf(e.stderr, "box: warning: %s\n", note)
	}
	return &newPlan{mint: mint}, nil
}

func runNew(e *env, o *newOptions, given []string) error {
	plan, err := planNew(e, o, given, time.Now())
	if err != nil {
		return err
	}
	mint := plan.mint
	placement := boxes.Placement(e.getenv)

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

	var req incus.InstancesPost
	if cl := plan.clone; cl != nil {
		if _, err := resolve(ctx, e, c, cl.From); err != nil {
			return err
		}
		if cl.Snapshot != "" {
			if err := needSnapshot(ctx, e, c, cl.From, cl.Snapshot); err != nil {
				return err
			}
		}
		var err error
		if req, err = incus.CloneRequest(*cl); err != nil {
			return vmErr(e, err)
		}
		p.Step("cloning %s into %s", o.from, o.Name)
	} else {
		pool, err := placementPool(ctx, e, c, placement)
		if err != nil {
			return err
		}
		mint.Pool = pool
		if req, err = incus.MintRequest(mint); err != nil {
			return vmErr(e, err)
		}
		kind := "container"
		if mint.VM {
			kind = "VM"
		}
		p.Step("creating %s (%s, template %s, image %s)", o.Name, kind, mint.Template, mint.Image)
	}

	// From here on a failure must not leave a half-made box behind.
	if err := c.Create(ctx, req); err != nil {
		discard(c, o.Name)
		return launchErr(e, o, "create", err)
	}
	// Every box gets its own machine ID before its first boot: systemd-networkd's DHCP
	// client identity derives from it, so two clones (or two mints of an image that
	// keeps a copy in /var/lib/dbus) would otherwise share a lease. A container's file
	// system is written while it is stopped; a VM's only through its agent, so a VM
	// clone is started, reset, and restarted once (a VM mint keeps what its image
	// gives: a restart per mint is not worth an image's mistake).
	vmClone := false
	if plan.clone != nil || !mint.VM {
		inst, _, err := c.Instance(ctx, o.Name)
		if err != nil {
			discard(c, o.Name)
			return launchErr(e, o, "inspect", err)
		}
		// A door's host port is unique on the host: a clone starts without its source's.
		if err := dropExposures(ctx, c, *inst); err != nil {
			discard(c, o.Name)
			return launchErr(e, o, "close the doors of", err)
		}
		if vmClone = inst.Type == incus.TypeVM; !vmClone {
			p.Step("giving %s a fresh machine ID", o.Name)
			if err := c.ResetMachineID(ctx, o.Name); err != nil {
				discard(c, o.Name)
				return launchErr(e, o, "reset the machine ID of", err)
			}
		}
	}
	p.Step("starting %s", o.Name)
	if err := c.Start(ctx, o.Name); err != nil {
		discard(c, o.Name)
		return launchErr(e, o, "start", err)
	}
	if vmClone {
		p.Step("giving %s a fresh machine ID (through its agent, then a restart)", o.Name)
		if err := resetVMMachineID(ctx, c, o.Name); err != nil {
			discard(c, o.Name)
			return launchErr(e, o, "reset the machine ID of", err)
		}
	}
	p.Step("waiting for %s's IPv4 lease", o.Name)
	ip, err := c.WaitIPv4(ctx, o.Name, boxes.Iface)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return withHint(fmt.Errorf("box %q is running but got no IPv4 lease on %s within %s", o.Name, boxes.Iface, o.timeout),
				fmt.Sprintf("the box is kept: check the host's network with 'box doctor'; 'box rm --force %s' removes it", o.Name))
		}
		discard(c, o.Name)
		return launchErr(e, o, "wait for the lease of", err)
	}
	inst, _, err := c.Instance(ctx, o.Name)
	if err != nil {
		return vmErr(e, err)
	}
	if inst.Config[incus.KeyUserData] != "" {
		p.Step("waiting for cloud-init in %s", o.Name)
		if err := provision(ctx, e, c, o.Name, o.timeout); err != nil {
			var pe *provisionError
			if errors.As(err, &pe) {
				return err // kept, stopped, for inspection
			}
			discard(c, o.Name)
			return launchErr(e, o, "provision", err)
		}
	}
	if plan.clone == nil {
		takePristine(ctx, e, c, p, o.Name, mint.Pool)
	}
	p.Done()
	s := boxes.Summarize(*inst, nil)
	note(e, "%s is ready (%s, %s, user %s, %s): box shell %s",
		o.Name, s.Type, ip, s.User, p.Elapsed().Round(100*time.Millisecond), o.Name)
	return nil
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
	return 0, usagef("for example BOX_LAUNCH_TIMEOUT=600 (seconds) or 10m", "%s=%q: want a positive number of seconds or a duration", boxes.EnvLaunchTimeout, v)
}

// launchErr words a failed launch; the box has been deleted.
func launchErr(e *env, o *newOptions, what string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return withHint(fmt.Errorf("could not %s box %q within %s; it was removed", what, o.Name, o.timeout), "a first launch may fetch the image: try a longer --timeout")
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: box %q was removed", o.Name)
	}
	return vmErr(e, fmt.Errorf("could not %s box %q (it was removed): %w", what, o.Name, err))
}

// discard deletes a half-made box, with its own deadline (the launch's may be over). A
// create cut short by the time-box goes on in incusd (it cannot be cancelled): wait for
// it to end, then delete what it made.
func discard(c *incus.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		inst, _, err := c.Instance(ctx, name)
		switch {
		case err == nil && !incus.IsBox(*inst):
			return // not ours: never touched
		case err == nil:
			_ = c.Stop(ctx, name, 0, true)
			if c.Delete(ctx, name) == nil {
				return
			}
		case !incus.IsNotFound(err) || !busy(ctx, c, name):
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// busy reports whether incusd is still running an operation on the instance name.
func busy(ctx context.Context, c *incus.Client, name string) bool {
	var ops map[string][]incus.Operation
	if err := c.Query(ctx, "GET", "/operations?recursion=1", nil, &ops); err != nil {
		return false
	}
	for _, op := range ops["running"] {
		for _, r := range op.Resources["instances"] {
			if strings.TrimPrefix(r, "/1.0/instances/") == name {
				return true
			}
		}
	}
	return false
}

// resetVMMachineID empties a running VM's /etc/machine-id once its agent answers, and
// restarts it: systemd then generates a new ID at boot (from the VM's own UUID, which
// Incus gives every copy) before networkd asks for a lease.
func resetVMMachineID(ctx context.Context, c *incus.Client, name string) error {
	for {
		err := c.ResetMachineID(ctx, name)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "agent") || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := c.Stop(ctx, name, 60*time.Second, false); err != nil {
		return err
	}
	return c.Start(ctx, name)
}

// needSnapshot checks that box has the snapshot, naming the ones it has otherwise.
func needSnapshot(ctx context.Context, e *env, c *incus.Client, box, snap string) error {
	snaps, err := c.Snapshots(ctx, box)
	if err != nil {
		return vmErr(e, err)
	}
	var names []string
	for _, s := range snaps {
		if s.Name == snap {
			return nil
		}
		names = append(names, s.Name)
	}
	hint := fmt.Sprintf("box %s has no snapshots: 'box snapshot %s LABEL' takes one", box, box)
	if len(names) > 0 {
		hint = fmt.Sprintf("box %s has: %s", box, strings.Join(names, ", "))
	}
	return withHint(fmt.Errorf("box %q has no snapshot %q", box, snap), hint)
}
