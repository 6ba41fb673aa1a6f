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
		Long: `Give an unprivileged local user the restricted tier: their own Incus project, user-UID,
reached through incus-user's socket (INCUS_DIR/` + host.UserSocket + `). Run by the operator (root, or
a member of incus-admin), after 'box setup-host'.

As themselves the user then runs box new, box shell, box list, ... with box's usual tag
boundary. Their project may attach a box only to box's bridge (the placement profile's
network) and holds only box's placement profile (a copy of the operator's) and an empty
default profile; host paths, nesting, privileged containers, raw and low-level config,
GPUs and other host devices, proxy devices and cluster targets are refused by incusd.
They see no other project: not another user's boxes, not the host's other instances.
Their images are their project's own (an alias they make never reaches another user's box
new); snapshots and backups are allowed.

incus-user sets a new user up itself, loosely (its own NAT bridge, host paths under their
home, nesting), and knows only the projects it made or saw at its start. So box grant
makes the user's first contact with incus-user itself, as the user, before they may reach
its socket; incus-user makes the project and the user's certificate (INCUS_DIR/users/UID,
root's: the user never holds the key, which the trust store confines to the project); box
converges both at once, removes incus-user's private bridge, and adds the user to the
socket's group. A project incus-user made before is converged the same way (refused
while it holds instances box did not make).

Re-running converges again (after a box upgrade, or to repair what 'box doctor' reports).
The user's new group takes effect at their next login.

On a kernel without nft bridge meta the host firewall's box-to-box drop matches the
bridge's ports by name, and incusd lets a granted user name their box's port (NIC
host_name); br_netfilter (bridge-nf-call-iptables=1) still drops their switched IPv4 in
the inet hooks. Without both, box grant refuses unless --port-name-firewall says the
operator takes that gap (box drill reports it).

--limit caps the project (limits.NAME in Incus: instances, containers, virtual-machines,
cpu, memory, disk, processes), so one user cannot starve the others; box records the
limits it set and doctor checks them; --no-limits removes them.`,
		Example: `  sudo box grant alice
  sudo box grant alice --limit instances=5 --limit memory=16GiB
  sudo -u alice box new --name work    # alice's box, in project user-UID`,
		Args:    boxArgs(1, "one user"),
		PreRunE: e.refuseRemoteArgs,
		RunE: onLocalHost(e, func(ctx context.Context, g host.GrantHost, args []string) error {
			limits := map[string]string{}
			for _, l := range limitFlags {
				k, v, err := host.ParseGrantLimit(l)
				if err != nil {
					return usagef("for example --limit instances=5 --limit memory=16GiB", "%s", err)
				}
				limits[k] = v
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
		ctx, cancel := hostContext()
		defer cancel()
		g := grantHost(e)
		defer g.Client.Close()
		return f(ctx, g, args)
	}
}
