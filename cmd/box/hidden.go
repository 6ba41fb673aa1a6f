package main

import (
	"os"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/drill"
)

// hidden dispatches box's internal entry points (argv[0] "__name"), which box runs as
// helpers of its own; they are not part of the CLI and not in help.
func hidden(args []string) (int, bool) {
	switch args[0] {
	case inet.FilterSubcommand:
		// Run by the internet tier inside the sandbox's namespaces: installs the filter.
		return inet.FilterMain(args[1:]), true
	case bwrap.NixStoreSubcommand:
		// Run by box run in a user and mount namespace of its own: layers the project's
		// Nix store over the host's, then becomes bwrap.
		return bwrap.NixStoreMain(args[1:]), true
	case bwrap.SessionSubcommand:
		// Run inside the sandbox as the command's first process: a session of its own,
		// the relayed terminal as its controlling terminal, then the command.
		return bwrap.SessionMain(args[1:]), true
	case bwrap.ForwardSubcommand:
		// Run in the sandbox's network namespace: listens for the named host ports and hands out sockets for the published ones.
		return bwrap.ForwardMain(args[1:]), true
	case drill.ProbeSubcommand:
		// Run by box drill inside the sandbox: reads the probe plan on stdin, prints results.
		return drill.ProbeMain(os.Stdin, os.Stdout, os.Stderr), true
	}
	return 0, false
}
