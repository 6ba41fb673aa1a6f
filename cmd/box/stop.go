package main

import (
	"time"

	"github.com/spf13/cobra"
)

func newStopCmd(e *env) *cobra.Command {
	var force bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:               "stop BOX",
		Aliases:           []string{"down"},
		Short:             "shut a box down (alias: down)",
		GroupID:           groupVM,
		Long:              helpText("stop"),
		Example:           helpText("stop.example"),
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
