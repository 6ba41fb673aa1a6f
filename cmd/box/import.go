package main

import (
	"time"

	"github.com/spf13/cobra"
)

func newImportCmd(e *env) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:     "import FILE [--name NAME]",
		Short:   "bring back a box from an export, onto this host's stack",
		GroupID: groupVM,
		Long:    helpText("import"),
		Example: helpText("import.example"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("run 'box import --help' for usage", "import takes one file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return vmBackend{e: e}.vm().Import(args[0], name, time.Now(),
				func(n string) error { return bwrapNameFree(e, n, args[0]) })
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the imported box's name (default: the exported box's)")
	return cmd
}
