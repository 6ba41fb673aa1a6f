package main

import (
	"errors"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
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
		Args: func(cmd *cobra.Command, args []string) error {
			// box new agent: the name given as an argument, as incus launch and most
			// tools take it (field review, session 16: the usage error named no way on).
			if len(args) == 1 && !cmd.Flags().Changed("name") && backend.ValidName(args[0]) == nil {
				return usagef("box new --name "+args[0]+" (with the same flags)", "new takes the box's name as --name, got %q", args[0])
			}
			return noArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var given []string
			cmd.Flags().Visit(func(f *pflag.Flag) { given = append(given, f.Name) })
			if o.profile == "" {
				// $BOX_PROFILE is --profile's default: the same profile, so the same backend.
				o.profile = e.getenv("BOX_PROFILE")
			}
			bwrap, err := newIsBwrap(e, o)
			switch {
			case err != nil:
				return err
			case bwrap:
				return newErr(e.bwrapBoxes().Mint(mintRequest(o, given)))
			case mintF != nil:
				return newErr(mintF(mintRequest(o, given)))
			}
			return newErr(e.vmBackend().Mint(mintRequest(o, given)))
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

// newErr words box new's refusals (the backends' typed errors) by flag name.
func newErr(err error) error {
	if set := (*backend.SettingsError)(nil); errors.As(err, &set) {
		return settingsErr(set)
	}
	var from *backend.FromError
	var wd *bwrap.NoWorkdirError
	var ne *bwrap.NetworkError
	var we *bwrap.WorkdirError
	switch {
	case errors.Is(err, backend.ErrNoName):
		return usagef("run 'box new --help' for usage", "box new needs --name NAME")
	case errors.As(err, &from):
		return usagef("--from takes BOX or BOX/SNAPSHOT", "--from: %s", from.Err)
	case errors.As(err, new(*backend.NameError)) && !errs.IsUsage(err):
		return usagef("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	case errors.As(err, &wd) && wd.Err != nil:
		return usagef("name an existing directory", "--workdir: %s", wd.Err)
	case errors.As(err, &wd):
		return usagef("name an existing directory", "--workdir %s: not a directory", wd.Dir)
	case errors.As(err, &ne):
		return usagef(tierHint(ne.Err), "--network: %s", ne.Err)
	case errors.As(err, &we):
		// The directory may be --workdir's: "cd into a project directory and run box
		// there" did not help one who had named it (field review, session 20).
		return errs.WithHint(err, "name a project directory with --workdir DIR, or cd into one and run box new there")
	}
	return err
}

// settingsErr words the settings a backend (or a clone) cannot honour by flag name.
func settingsErr(set *backend.SettingsError) error {
	flags := make([]string, len(set.Settings))
	for i, s := range set.Settings {
		flags[i] = "--" + s
	}
	list := strings.Join(flags, ", ")
	switch {
	case set.Clone && set.Backend == profiles.BackendVM:
		return usagef("a clone is a copy of its source: drop "+strings.Join(flags, " ")+", or mint a new box without --from", "--from cannot be combined with %s", list)
	case set.Clone:
		return usagef("a clone is a copy of its source: drop them, or mint a new box without --from", "a clone cannot take %s", list)
	case set.Backend == profiles.BackendVM:
		return usagef("a vm box's network is the box bridge (set up by 'box setup-host') and it has no host working directory or agent of the host; --network, --workdir and --ssh-host are for --backend bwrap",
			"a vm box cannot take %s", list)
	}
	return usagef("resources, instance types and the launch timeout are vm settings: drop them, or use --backend vm", "a bwrap box cannot take %s", list)
}
