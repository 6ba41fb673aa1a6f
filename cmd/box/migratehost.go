package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

type migrateHostOptions struct {
	box     string
	dnsName string
	timeout time.Duration
}

func newMigrateHostCmd(e *env) *cobra.Command {
	o := &migrateHostOptions{}
	cmd := &cobra.Command{
		Use:     "migrate-host --box NAME",
		Short:   "move a legacy (claudebox) box onto the current isolation stack",
		GroupID: groupHost,
		Long: `Re-home a box minted by claudebox (user.claudebox=1, profile claude-dev on claudenet)
onto the current stack, in an order that never leaves it untagged or off a network it
was not on before:

  1. tag it: user.box=1 and user.box.user=claude (unless set)
  2. stop it
  3. make box-net its only profile (instance-level NICs are removed: they would
     override the profile's)
  4. start it
  5. verify an IPv4 address on boxnet and DNS (getent hosts --dns-name)
  6. drop the legacy tag user.claudebox

If a step fails the box keeps both tags and the error says where it stopped. An
instance box did not mint is refused. Run box setup-host first.`,
		Example: `  box migrate-host --box work`,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runMigrateHost(e, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.box, "box", "", "the box to migrate (required)")
	f.StringVar(&o.dnsName, "dns-name", "example.com", "a public name the box must resolve afterwards")
	f.DurationVar(&o.timeout, "timeout", 90*time.Second, "how long to wait for the address and DNS")
	return cmd
}

func runMigrateHost(e *env, o *migrateHostOptions) error {
	if o.box == "" {
		return usagef("for example box migrate-host --box work", "--box is required")
	}
	ctx, cancel := hostContext()
	defer cancel()
	c := e.daemon().Admin()
	defer c.Close()
	err := host.Migrate(ctx, c, host.MigrateOptions{Name: o.box, DNSName: o.dnsName, Timeout: o.timeout,
		Logf: func(f string, a ...any) { fmt.Fprintf(e.stdout, f+"\n", a...) }})
	if errors.Is(err, host.ErrNotBox) {
		return withHint(err, "box only migrates instances it (or claudebox) minted")
	}
	if err != nil {
		return hostErr(c.Socket(), err)
	}
	fmt.Fprintf(e.stderr, "box: migrate-host: %s is on the current stack\n", o.box)
	return nil
}
