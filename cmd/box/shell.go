package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

func newShellCmd(e *env) *cobra.Command {
	var l launchFlags
	var hostPorts []string
	cmd := vmVerb(e, "shell BOX", "open a login shell in a box as its user", boxArgs(1, "one box"), func(cmd *cobra.Command, args []string) error {
		return onBox(e, args[0], func(be backend.Backend) (err error) {
			req := l.req()
			if _, req.HostPorts, err = portFlags(nil, hostPorts); err != nil {
				return err
			}
			return be.Enter(args[0], req)
		})
	})
	l.register(cmd)
	cmd.Flags().StringArrayVar(&hostPorts, "host-port", nil, hostPortUsage)
	return cmd
}

// hostPortUsage is --host-port's help on the verbs that enter a box.
var hostPortUsage = "bwrap boxes: let this session reach the host's 127.0.0.1:PORT as host.box.internal:PORT, beside the profile's host_ports (repeatable; tiers " + policy.TierListWhere(policy.Tier.OwnNetNS, "") + ")"
