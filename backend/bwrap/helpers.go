package bwrap

import "github.com/heavy-duty/box/backend/bwrap/inet"

// HelperMain runs the bwrap backend's internal entry points (argv[0] "__name"), which
// box runs as helpers of its own; ok is false when args[0] names none of them.
func HelperMain(args []string) (code int, ok bool) {
	switch args[0] {
	case inet.FilterSubcommand:
		// Run by the internet tier inside the sandbox's namespaces: installs the filter.
		return inet.FilterMain(args[1:]), true
	case NixStoreSubcommand:
		// Run by box run in a user and mount namespace of its own: layers the project's
		// Nix store over the host's, then becomes bwrap.
		return NixStoreMain(args[1:]), true
	case SessionSubcommand:
		// Run inside the sandbox as the command's first process: a session of its own,
		// the relayed terminal as its controlling terminal, then the command.
		return SessionMain(args[1:]), true
	case ForwardSubcommand:
		// Run in the sandbox's network namespace: listens for the named host ports and hands out sockets for the published ones.
		return ForwardMain(args[1:]), true
	}
	return 0, false
}
