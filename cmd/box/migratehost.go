package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/heavy-duty/box/backend/vm"
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
		Long:    helpText("migrate-host"),
		Example: helpText("migrate-host.example"),
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
	ctx, cancel := vm.SignalContext() // Ctrl-C and SIGTERM cancel it
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
