package main

import (
	"github.com/spf13/cobra"
)

func newRmCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "rm BOX",
		Short:             "delete a box and its snapshots (asks first)",
		GroupID:           groupVM,
		Long:              helpText("rm"),
		Example:           helpText("rm.example"),
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			be, err := backendFor(e, name)
			if err != nil {
				return err
			}
			return be.Delete(name, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not ask")
	cmd.Flags().BoolVarP(&force, "yes", "y", false, "the same as --force (every verb that asks takes both)")
	return cmd
}
