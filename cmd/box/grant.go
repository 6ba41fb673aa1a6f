package main

import (
	"context"
	"strings"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

func newGrantCmd(e *env) *cobra.Command {
	var limitFlags []string
	var noLimits, portNames bool
	cmd := &cobra.Command{
		Use:     "grant USER",
		Short:   "give a local user their own confined Incus project for boxes (the restricted tier)",
		GroupID: groupHost,
		Long:    helpText("grant", "{{socket}}", host.UserSocket),
		Example: helpText("grant.example"),
		Args:    boxArgs(1, "one user"),
		PreRunE: e.refuseRemoteArgs,
		RunE: onLocalHost(e, func(ctx context.Context, g host.GrantHost, args []string) error {
			limits, err := host.ParseGrantLimits(limitFlags)
			if err != nil {
				return usagef("for example --limit instances=5 --limit memory=16GiB", "%s", err)
			}
			if noLimits && len(limitFlags) > 0 {
				return usagef("pick one", "--limit and --no-limits exclude each other")
			}
			gap, gapErr := host.DetectPortNameGap()
			return g.Grant(ctx, host.GrantRequest{User: args[0], Limits: limits, SetLimits: noLimits || len(limitFlags) > 0,
				PortName: host.PortNameFact{Gap: gap, Err: gapErr, Accepted: portNames}})
		}),
	}
	cmd.Flags().BoolVar(&noLimits, "no-limits", false, "remove the limits an earlier box grant --limit set")
	cmd.Flags().BoolVar(&portNames, "port-name-firewall", false,
		"grant on a host where a granted user can name their box's bridge port out of the box-to-box drop (no nft bridge meta, no br_netfilter; box drill reports it)")
	cmd.Flags().StringArrayVar(&limitFlags, "limit", nil, "a project limit NAME=VALUE (repeatable; NAME: "+strings.Join(host.GrantLimits, ", ")+
		"); given, they replace the limits of an earlier grant, which a grant without --limit keeps")
	return cmd
}

// grantHost is the host the grant verbs act on: the local incusd as its administrator
// (vm.Daemon.Admin; the caller closes it), with this environment's incus directory,
// placement profile, the vm verbs' hints for incusd's errors, and their closing lines.
func grantHost(e *env) host.GrantHost {
	return host.GrantHost{Client: e.daemon().Admin(), IncusDir: host.IncusDir(e.getenv), Placement: vm.Placement(e.getenv),
		IncusErr: func(err error) error { return vmErr(e, err) },
		Note:     func(format string, a ...any) { note(e, format, a...) }}
}

// refuseRemoteArgs is refuseRemote as a PreRunE: grant and revoke act on this host's
// incusd and incus-user (peer credentials, files in INCUS_DIR).
func (e *env) refuseRemoteArgs(cmd *cobra.Command, _ []string) error { return e.refuseRemote(cmd) }

// onLocalHost runs f with the grant host on the local incusd's administrator client,
// cancelled on Ctrl-C.
func onLocalHost(e *env, f func(ctx context.Context, g host.GrantHost, args []string) error) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		ctx, cancel := vm.SignalContext() // Ctrl-C and SIGTERM cancel it
		defer cancel()
		g := grantHost(e)
		defer g.Client.Close()
		return f(ctx, g, args)
	}
}
