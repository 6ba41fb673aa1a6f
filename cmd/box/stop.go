package main

import (
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newStopCmd(e *env) *cobra.Command {
	var force bool
	var timeout time.Duration
	cmd := vmVerb(e, "stop BOX", "shut a box down (alias: down)", boxArgs(1, "one box"), func(cmd *cobra.Command, args []string) error {
		return onBox(e, args[0], func(be backend.Backend) error { return be.Stop(args[0], timeout, force) })
	})
	cmd.Aliases = []string{"down"}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "stop at once, without a clean shutdown")
	cmd.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long a clean shutdown may take")
	return cmd
}
