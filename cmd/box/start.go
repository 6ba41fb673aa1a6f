package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newStartCmd(e *env) *cobra.Command {
	return vmVerb(e, "start BOX", "start a stopped box", boxArgs(1, "one box"), func(cmd *cobra.Command, args []string) error {
		return onBox(e, args[0], func(be backend.Backend) error { return be.Start(args[0]) })
	})
}
