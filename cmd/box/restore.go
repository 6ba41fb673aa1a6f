package main

import (
	"github.com/spf13/cobra"
)

func newRestoreCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "restore BOX SNAPSHOT",
		Short:             "roll a box back to a snapshot (asks first)",
		GroupID:           groupVM,
		Long:              helpText("restore"),
		Example:           helpText("restore.example"),
		Args:              boxArgs(2, "a box and a snapshot"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, snap := args[0], args[1]
			be, err := backendFor(e, name)
			if err != nil {
				return err
			}
			return be.Restore(name, snap, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not ask")
	cmd.Flags().BoolVarP(&force, "yes", "y", false, "the same as --force (every verb that asks takes both)")
	return cmd
}
