package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

type teardownHostOptions struct {
	force      bool
	purgeIncus bool
	unitDir    string
}

func newTeardownHostCmd(e *env) *cobra.Command {
	o := &teardownHostOptions{}
	cmd := &cobra.Command{
		Use:     "teardown-host [--force] [--purge-incus]",
		Short:   "remove the isolation stack setup-host built (and claudebox's)",
		GroupID: groupHost,
		Long:    helpText("teardown-host"),
		Example: helpText("teardown-host.example"),
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runTeardownHost(e, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.force, "force", false, "delete the boxes first (never an instance box did not mint)")
	f.BoolVar(&o.purgeIncus, "purge-incus", false, "also purge the Incus package (system daemon only, no instance left)")
	f.StringVar(&o.unitDir, "unit-dir", host.DefaultUnitDir, "where setup-host wrote the boot unit")
	return cmd
}

func runTeardownHost(e *env, o *teardownHostOptions) error {
	ctx, cancel := hostContext()
	defer cancel()
	c := e.daemon().Admin()
	defer c.Close()
	if o.purgeIncus && c.Socket() != host.SystemSocket {
		return withHint(fmt.Errorf("--purge-incus: box talks to the daemon at %s, not the system's (%s)", c.Socket(), host.SystemSocket),
			"unset INCUS_SOCKET and INCUS_DIR to purge the system's Incus")
	}
	// All or nothing: --purge-incus's own precondition (no instance box did not mint) is
	// checked before the teardown deletes a box.
	if o.purgeIncus {
		foreign, err := host.ForeignInstances(ctx, c)
		if err != nil {
			return hostErr(c.Socket(), err)
		}
		if len(foreign) > 0 {
			return withHint(fmt.Errorf("--purge-incus: instances box did not mint would remain (%s); nothing was removed", strings.Join(foreign, ", ")),
				"box never touches them: delete them with incus, or drop --purge-incus to keep Incus")
		}
	}
	steps, err := host.Teardown(ctx, c, host.TeardownOptions{Force: o.force, UnitDir: o.unitDir})
	for _, s := range steps {
		fmt.Fprintln(e.stdout, s)
	}
	var foreign *host.ForeignError
	switch {
	case errors.Is(err, host.ErrBoxesExist):
		return withHint(err, "delete them first (box rm), or box teardown-host --force to delete them")
	case errors.As(err, &foreign):
		return err
	case err != nil:
		return hostErr(c.Socket(), err)
	}
	fmt.Fprintf(e.stderr, "box: teardown-host: nothing of the stack is left\n")
	if !o.purgeIncus {
		return nil
	}
	fmt.Fprintf(e.stderr, "box: running: apt-get purge -y incus incus-client\n")
	return host.PurgeIncus(e.stderr)
}
