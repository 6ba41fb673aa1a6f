package main

import (
	"time"

	"github.com/spf13/cobra"
)

func newStopCmd(e *env) *cobra.Command {
	var force bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:     "stop BOX",
		Aliases: []string{"down"},
		Short:   "shut a box down (alias: down)",
		GroupID: groupVM,
		Long: `Shut a box down cleanly, within --timeout; --force stops it at once (like pulling
the plug). Stopping a stopped box does nothing. 'box down' is the same verb (upstream's
name for it). A bwrap box runs only while a shell or exec runs in it: box stop says so,
and leaves ending that command to you.`,
		Example: `  box stop work
  box stop work --force`,
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := backendFor(e, args[0])
			if err != nil {
				return err
			}
			return be.Stop(args[0], timeout, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "stop at once, without a clean shutdown")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long a clean shutdown may take")
	return cmd
}
