package main

import (
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/vm"
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
	sshHosts                  []string
}

func newNewCmd(e *env) *cobra.Command { return newNewCmdWith(e, nil) }

// newNewCmdWith builds the verb with mintF (nil: vm.Backend.Mint) as the vm backend's
// box new, so tests can check argv to the request.
func newNewCmdWith(e *env, mintF func(backend.MintRequest) error) *cobra.Command {
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
default the current one), and --ssh-host's hosts (beside the profile's ssh.hosts: every
box exec and box shell gets box's filtering ssh-agent for them); see 'box help shell'. The
vm-only flags (--cpu, --memory,
--disk, --vm, --container, --timeout) are refused for it, and --network, --workdir and
--ssh-host for a vm box. A name is unique across both backends.

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
			if o.profile == "" {
				// $BOX_PROFILE is --profile's default: the same profile, so the same backend.
				o.profile = e.getenv("BOX_PROFILE")
			}
			bwrap, err := newIsBwrap(e, o, given)
			if err != nil {
				return err
			}
			var be backend.Backend = vmBackend{e: e, mint: mintF}
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
	f.StringVar(&o.profile, "profile", "", "the box's profile (default $BOX_PROFILE): its backend (unless --backend), template, resources and, for bwrap, its sandbox apply")
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
