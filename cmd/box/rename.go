package main

import (
	"github.com/spf13/cobra"
)

func newRenameCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:               "rename OLD NEW",
		Short:             "rename a stopped box",
		GroupID:           groupVM,
		Long:              helpText("rename"),
		Example:           helpText("rename.example"),
		Args:              boxArgs(2, "the old and the new name"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, nu := args[0], args[1]
			be, err := backendFor(e, old)
			if err != nil {
				return err
			}
			return be.Rename(old, nu)
		},
	}
}
