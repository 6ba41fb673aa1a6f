package main

import (
	"time"

	"github.com/spf13/cobra"
)

func newImportCmd(e *env) *cobra.Command {
	var name string
	cmd := vmVerb(e, "import FILE [--name NAME]", "bring back a box from an export, onto this host's stack", argRange(1, 1, "import takes one file"),
		func(cmd *cobra.Command, args []string) error {
			return e.vmBackend().Import(args[0], name, time.Now(), e.bwrapBoxes().Taken)
		})
	cmd.ValidArgsFunction = nil // a file, not a box
	cmd.Flags().StringVar(&name, "name", "", "the imported box's name (default: the exported box's)")
	return cmd
}
