package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newRenameCmd(e *env) *cobra.Command {
	return vmVerb(e, "rename OLD NEW", "rename a stopped box", boxArgs(2, "the old and the new name"), func(cmd *cobra.Command, args []string) error {
		return onBox(e, args[0], func(be backend.Backend) error { return be.Rename(args[0], args[1]) })
	})
}
