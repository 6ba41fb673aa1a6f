package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newRestoreCmd(e *env) *cobra.Command {
	var force bool
	cmd := vmVerb(e, "restore BOX SNAPSHOT", "roll a box back to a snapshot (asks first)", boxArgs(2, "a box and a snapshot"), func(cmd *cobra.Command, args []string) error {
		return onBox(e, args[0], func(be backend.Backend) error { return be.Restore(args[0], args[1], force) })
	})
	forceFlags(cmd, &force)
	return cmd
}
