package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

func newIncusCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "incus BOX -- ARG...",
		Short:   "run incus on a box (tag-checked; {} stands for its name, else it is appended)",
		GroupID: groupVM,
		Long: `The escape hatch: everything box does not wrap goes to incus itself, aimed at a box.
box checks that BOX is a box (tagged user.box=1 or user.claudebox=1; never an instance
it did not mint), replaces {} in the arguments with the box's instance name (with no {},
the name is appended at the end), prints the command it runs on stderr, and runs the
incus client pinned to the daemon and project box checked: a configuration of its own
(INCUS_CONF) whose only remote is box's socket (or, with --remote R or BOX R:NAME, that
remote: its address, project, client certificate and accepted server certificate),
INCUS_REMOTE and INCUS_PROJECT set, so 'incus remote switch', 'incus project switch' and
$INCUS_PROJECT do not move it elsewhere (your incus aliases do not apply either). Its
exit code is box's.

Arguments that touch a profile, a network, a device, a nic or a security.* key can move
the box off the isolation stack: box warns and proceeds; from there the trust boundary
is yours to keep. --project and REMOTE:{} in the arguments are refused (the tag was checked here, not
there). The check covers BOX only: other instance names you write into the arguments
go to incus as they are.`,
		Example: `  box incus work -- config show                  # incus config show work
  box incus work -- exec {} -- bash -l            # a root shell
  box incus work -- file push ./notes.txt {}/home/dev/`,
		Args: func(cmd *cobra.Command, args []string) error {
			_, rest, ok := splitDash(cmd, args, true)
			if !ok {
				return usagef("run 'box incus --help' for usage", "incus takes a box and incus arguments: box incus BOX -- ARG...")
			}
			if bad := vm.Elsewhere(rest); bad != "" {
				return usagef("box incus aims incus at one box on this daemon's default project; for anything else, run incus yourself",
					"%q would aim incus at another project or remote, where box has not checked the tag", bad)
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			box, rest, _ := splitDash(cmd, args, true)
			if b, err := bwrapBox(e, box); err != nil || b != nil {
				return firstErr(err, func() error {
					return usagef("box shell, box exec, box snapshot... work on it", "box %s is a bwrap box: box incus is for vm boxes", box)
				})
			}
			return runIncus(e, box, rest)
		},
	}
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runIncus runs the incus client on a box, pinned to the daemon and project its tag was
// checked on (backend/vm builds the command); its exit code is box's.
func runIncus(e *env, name string, rest []string) error {
	h, err := vmBackend{e: e}.vm().Incus(name, rest)
	if err != nil {
		return err
	}
	bin, err := vm.LookIncus()
	if err != nil {
		return err // hints.go: how to install it
	}
	q := make([]string, len(h.Args))
	for i, a := range h.Args {
		q[i] = shellQuote(a)
	}
	fmt.Fprintf(e.stderr, "box: running: incus %s   (on %s, project %s)\n", strings.Join(q, " "), h.Where, h.Project)
	if len(h.OffStack) > 0 {
		fmt.Fprintf(e.stderr, "box: warning: %s can move box %s off the isolation stack (profile, network, device, nic, security.*): from here the trust boundary is yours to keep\n",
			strings.Join(h.OffStack, " "), name)
	}
	return h.Run(bin, os.Environ(), e.stdin, e.stdout, e.stderr) // incus's exit is box's
}
