package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newShellCmd(e *env) *cobra.Command {
	var l launchFlags
	var hostPorts []string
	cmd := &cobra.Command{
		Use:               "shell BOX",
		Short:             "open a login shell in a box as its user",
		GroupID:           groupVM,
		Long:              helpText("shell"),
		Example:           helpText("shell.example"),
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := backendFor(e, args[0])
			if err != nil {
				return err
			}
			req := l.req()
			if _, req.HostPorts, err = portFlags(nil, hostPorts); err != nil {
				return err
			}
			return be.Enter(args[0], req)
		},
	}
	l.register(cmd)
	cmd.Flags().StringArrayVar(&hostPorts, "host-port", nil, hostPortUsage)
	return cmd
}

// Enter is box shell for a vm box: the user's login shell on your terminal.
func (v vmBackend) Enter(name string, l backend.LaunchRequest) error {
	return v.vm().Enter(name, l)
}

// hostPortUsage is --host-port's help on the verbs that enter a box.
const hostPortUsage = "bwrap boxes: let this session reach the host's 127.0.0.1:PORT as host.box.internal:PORT, beside the profile's host_ports (repeatable; tiers none, allowlist, internet)"
