package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newRmCmd(e *env) *cobra.Command {
	var force bool
	cmd := vmVerb(e, "rm BOX", "delete a box and its snapshots (asks first)", boxArgs(1, "one box"), func(cmd *cobra.Command, args []string) error {
		return onBox(e, args[0], func(be backend.Backend) error { return be.Delete(args[0], force) })
	})
	forceFlags(cmd, &force)
	return cmd
}

// forceFlags are --force and --yes of a verb that asks first.
func forceFlags(cmd *cobra.Command, force *bool) {
	cmd.Flags().BoolVarP(force, "force", "f", false, "do not ask")
	cmd.Flags().BoolVarP(force, "yes", "y", false, "the same as --force (every verb that asks takes both)")
}
