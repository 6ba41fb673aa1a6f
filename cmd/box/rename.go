package main

import (
	"github.com/spf13/cobra"
)

func newRenameCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "rename OLD NEW",
		Short:   "rename a stopped box",
		GroupID: groupVM,
		Long: `Rename a box. Incus renames stopped instances only: a running box is refused with
"stop it first". The box keeps its snapshots and its stamp. A bwrap box is renamed while
nothing runs in it.`,
		Example:           `  box stop work && box rename work old-work`,
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
