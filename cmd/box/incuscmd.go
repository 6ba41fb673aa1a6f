package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

func newIncusCmd(e *env) *cobra.Command {
	cmd := vmVerb(e, "incus BOX -- ARG...", "run incus on a box (tag-checked; {} stands for its name, else it is appended)",
		func(cmd *cobra.Command, args []string) error {
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
		func(cmd *cobra.Command, args []string) error {
			box, rest, _ := splitDash(cmd, args, true)
			if err := vmOnlyVerb(e, "incus", box); err != nil {
				return err
			}
			return runIncus(e, box, rest)
		})
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runIncus runs the incus client on a box, pinned to the daemon and project its tag was
// checked on (backend/vm builds the command); its exit code is box's.
func runIncus(e *env, name string, rest []string) error {
	h, err := e.vmBackend().Incus(name, rest)
	if err != nil {
		return err
	}
	bin, err := vm.LookIncus()
	if err != nil {
		return err // hints.go: how to install it
	}
	fmt.Fprintf(e.stderr, "box: running: incus %s   (on %s, project %s)\n", h.CommandLine(), h.Where, h.Project)
	if len(h.OffStack) > 0 {
		fmt.Fprintf(e.stderr, "box: warning: %s can move box %s off the isolation stack (profile, network, device, nic, security.*): from here the trust boundary is yours to keep\n",
			strings.Join(h.OffStack, " "), name)
	}
	return h.Run(bin, os.Environ(), e.stdin, e.stdout, e.stderr) // incus's exit is box's
}
