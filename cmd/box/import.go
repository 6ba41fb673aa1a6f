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
		Long: `Import a box from a file written by 'box export': its disk, its snapshots and its
stamp come back as they were; what ties it to a host is made afresh: it is placed on
this host's placement profile only, gets new MAC addresses (and, a VM, a new UUID) and
its own machine ID, and the import is recorded in its stamp (user.box.imported,
user.box.imported.last, user.box.imported.count). Then it is started.

Before anything is uploaded, box reads the file's index and refuses: an instance box
did not mint (no user.box=1 or user.claudebox=1), an instance or snapshot with a key or
device box never gives a box (a host path, another NIC, security.* or raw.*), and a name
that an instance here already has (--name picks another). The file streams to incusd;
nothing is held in memory. An import that fails or is interrupted leaves no box.`,
		Example: `  box import work-20260101T120000Z.tar.gz
  box import work.tar.gz --name work2`,
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
