package main

import (
	"fmt"
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
			if b, err := bwrapBox(e, args[0]); err != nil || b != nil {
				return firstErr(err, func() error { return bwrapStop(e, b) })
			}
			ctx, stop := vmContext()
			defer stop()
			c := e.client()
			defer c.Close()
			inst, err := resolve(ctx, e, c, args[0])
			if err != nil {
				return err
			}
			if !inst.Running() {
				fmt.Fprintf(e.stderr, "box: %s is not running\n", args[0])
				return nil
			}
			if err := c.Stop(ctx, args[0], timeout, force); err != nil {
				if !force {
					return withHint(vmErr(e, err), "box stop --force "+args[0]+" stops it at once")
				}
				return vmErr(e, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "stop at once, without a clean shutdown")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long a clean shutdown may take")
	return cmd
}
