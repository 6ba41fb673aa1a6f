package main

import (
	"time"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

func newExportCmd(e *env) *cobra.Command {
	var instanceOnly bool
	cmd := vmVerb(e, "export BOX [FILE]", "write a stopped box, snapshots included, to one file", argRange(1, 2, "export takes a box and an optional file"),
		func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := vmOnlyVerb(e, "export", name); err != nil {
				return err
			}
			now := time.Now().UTC()
			file := vm.ExportFile(name, now)
			if len(args) == 2 {
				file = args[1]
			}
			return e.vmBackend().Export(name, file, instanceOnly, now)
		})
	cmd.Flags().BoolVar(&instanceOnly, "instance-only", false, "leave the snapshots out")
	return cmd
}
