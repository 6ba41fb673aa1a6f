package main

import (
	"os"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
)

// hidden dispatches box's internal entry points (argv[0] "__name"), which box runs as
// helpers of its own; they are not part of the CLI and not in help.
func hidden(args []string) (int, bool) {
	if args[0] == drill.ProbeSubcommand {
		// Run by box drill inside the sandbox: reads the probe plan on stdin, prints results.
		return drill.ProbeMain(os.Stdin, os.Stdout, os.Stderr), true
	}
	if args[0] == drill.InflightSubcommand {
		// Pushed by box drill --backend vm into its two boxes (sibling:fds-in-flight).
		return drill.InflightMain(args[1:], os.Stdin, os.Stdout), true
	}
	return bwrap.HelperMain(args)
}
