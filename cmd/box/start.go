package main

import (
	"github.com/spf13/cobra"
)

func newStartCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "start BOX",
		Short:             "start a stopped box",
		GroupID:           groupVM,
		Long:              helpText("start"),
		Example:           helpText("start.example"),
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := backendFor(e, args[0])
			if err != nil {
				return err
			}
			return be.Start(args[0])
		},
	}
}
