package main

import (
	"github.com/spf13/cobra"
)

func newRestoreCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "restore BOX SNAPSHOT",
		Short:   "roll a box back to a snapshot (asks first)",
		GroupID: groupVM,
		Long: `Roll a box back to one of its snapshots. Everything done in the box since is lost,
so box asks first on a terminal; --force skips the question. Without a terminal and
without --force it refuses. A bwrap box's home and agent state are replaced by the
snapshot's copy, atomically, while nothing runs in it.`,
		Example: `  box restore work authed
  box restore work authed --force`,
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
