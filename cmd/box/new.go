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
		Long:    helpText("new", "{{placement-env}}", vm.PlacementEnv, "{{placement}}", vm.DefaultPlacement, "{{cpu}}", vm.DefaultCPU, "{{memory}}", vm.DefaultMemory, "{{disk}}", vm.DefaultDisk),
		Example: helpText("new.example"),
		Args:    noArgs,
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
			switch {
			case bwrap:
				return e.bwrapBoxes().Mint(mintRequest(o, given))
			case mintF != nil:
				return mintF(mintRequest(o, given))
			}
			return e.vmBackend().Mint(mintRequest(o, given))
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
