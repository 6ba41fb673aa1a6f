package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

// groupHost is the help group of the host-stack verbs.
const groupHost = "host"

// hostErr adds the hint every host verb shares when incusd (at socket sock) cannot be
// reached.
func hostErr(sock string, err error) error {
	if err == nil {
		return nil
	}
	err = cliHint(err) // hints.go: a typed error's hint is the one it keeps
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		return err // a remote's errors say which remote and what to do
	}
	if host.Unreached(err) {
		return withHint(err, fmt.Sprintf("is incusd running and is %s its socket? (INCUS_SOCKET / INCUS_DIR choose another)", sock))
	}
	return err
}

type setupHostOptions struct {
	bridge       string
	subnet       string
	resolvers    []string
	pool         string
	unitDir      string
	firewallOnly bool
	gateway      string
}

func newSetupHostCmd(e *env) *cobra.Command {
	o := &setupHostOptions{}
	cmd := &cobra.Command{
		Use:     "setup-host [flags]",
		Short:   "build the vm backend's isolation stack on this host (idempotent)",
		GroupID: groupHost,
		Long:    helpText("setup-host"),
		Example: helpText("setup-host.example"),
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runSetupHost(e, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.subnet, "subnet", "", "pin the bridge's subnet (e.g. 10.99.0.0/24; else $"+envSubnet+"); refused if something else claims it")
	f.StringArrayVar(&o.resolvers, "resolver", nil, "upstream DNS resolver of the boxes, an IPv4 address (repeatable; default: the bridge's current ones, else the host's, else 1.1.1.1 and 9.9.9.9)")
	f.StringVar(&o.pool, "pool", host.DefaultPool, "storage pool of the boxes' root disk")
	f.StringVar(&o.unitDir, "unit-dir", host.DefaultUnitDir, "where the boot unit is written")
	f.BoolVar(&o.firewallOnly, "firewall-only", false, "only (re-)apply the host firewall (what the boot unit runs)")
	f.StringVar(&o.gateway, "gateway", "", "with --firewall-only: the bridge's address (e.g. 10.88.0.1/24) instead of asking incusd")
	f.StringVar(&o.bridge, "bridge", host.BridgeName, "the box bridge's name")
	_ = f.MarkHidden("bridge")
	return cmd
}

// envSubnet stands in for --subnet (upstream's scripting form for pinned hosts).
const envSubnet = "BOX_SUBNET"

func runSetupHost(e *env, o *setupHostOptions) error {
	if o.subnet == "" && !o.firewallOnly {
		o.subnet = e.getenv(envSubnet)
	}
	resolvers, err := host.ParseResolvers(o.resolvers)
	if err != nil {
		return usagef("for example --resolver 9.9.9.9", "%s", err)
	}
	if o.gateway != "" && !o.firewallOnly {
		return usagef("--gateway goes with --firewall-only", "--gateway without --firewall-only")
	}
	if o.gateway != "" {
		if _, err := host.ParseGateway(o.gateway); err != nil {
			return usagef("for example --gateway 10.88.0.1/24", "--gateway: %s", err)
		}
	}
	if r := e.remoteName(); r != "" && o.firewallOnly {
		return usagef(host.RemoteFirewallFix(r), "--firewall-only applies this machine's nftables: it cannot reach remote %s's host", r)
	}
	if err := host.CheckRoot(e.remoteName(), os.Geteuid()); err != nil {
		return err // hints.go: sudo
	}
	if err := incusAbsent(e); err != nil {
		return err
	}
	ctx, cancel := vm.SignalContext() // Ctrl-C and SIGTERM cancel it
	defer cancel()
	c := e.daemon().Admin() // vm.Daemon.Admin: the remote in force, else the local admin socket
	defer c.Close()

	steps, err := host.SetupHost(ctx, c, host.SetupRequest{FirewallOnly: o.firewallOnly, Gateway: o.gateway,
		SetupOptions: host.SetupOptions{Bridge: o.bridge, Subnet: o.subnet, Resolvers: resolvers, Pool: o.pool,
			UnitDir: o.unitDir, Exe: host.Exe(), Remote: c.RemoteName()}})
	var gw *host.GatewayError
	if errors.As(err, &gw) {
		return withHint(hostErr(c.Socket(), gw.Err), "run box setup-host first, or pass --gateway")
	}
	for _, s := range steps {
		if s.Outcome != "" {
			fmt.Fprintln(e.stdout, s)
		}
	}
	if err != nil {
		if errors.Is(err, host.ErrClaimed) {
			return usagef("pick a free subnet, or leave --subnet out to let box choose", "%s", err)
		}
		return hostErr(c.Socket(), err)
	}
	n := host.Tally(steps)
	fmt.Fprintf(e.stderr, "box: setup-host: %d created, %d already right, %d changed\n", n[host.Created], n[host.Right], n[host.Changed])
	if r := c.RemoteName(); r != "" {
		fmt.Fprintf(e.stderr, "box: note: on remote %s the stack is built but for its host firewall: %s\n", r, host.RemoteFirewallFix(r))
	} else if !o.firewallOnly && !host.SystemdRunning() {
		fmt.Fprintf(e.stderr, "box: note: systemd is not running here: the boot unit is written and enabled for when it is; re-run box setup-host --firewall-only after each boot meanwhile\n")
	}
	return nil
}
