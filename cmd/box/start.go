package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newStartCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "start BOX",
		Short:   "start a stopped box",
		GroupID: groupVM,
		Long: `Start a stopped box. Starting a running box does nothing. A bwrap box is not
started (it runs while box shell or box exec does): refused.`,
		Example:           `  box start work && box shell work`,
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			if b, err := bwrapBox(e, args[0]); err != nil || b != nil {
				return firstErr(err, func() error { return refuseStart(args[0]) })
			}
			ctx, stop := vmContext()
			defer stop()
			c := e.client()
			defer c.Close()
			inst, err := resolve(ctx, e, c, args[0])
			if err != nil {
				return err
			}
			if inst.Running() {
				fmt.Fprintf(e.stderr, "box: %s is already running\n", args[0])
				return nil
			}
			return vmErr(e, c.Start(ctx, args[0]))
		},
	}
}
