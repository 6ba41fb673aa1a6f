package main

import (
	"errors"
	"fmt"

	"github.com/heavy-duty/box/backend/vm"
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
	ctx, cancel := vm.SignalContext() // Ctrl-C and SIGTERM cancel it
	defer cancel()
	c := e.daemon().Admin()
	defer c.Close()
	steps, err := host.TeardownHost(ctx, c, host.TeardownRequest{PurgeIncus: o.purgeIncus,
		TeardownOptions: host.TeardownOptions{Force: o.force, UnitDir: o.unitDir}})
	for _, s := range steps {
		fmt.Fprintln(e.stdout, s)
	}
	var sys *host.NotSystemDaemonError
	var remain *host.ForeignInstancesError
	var foreign *host.ForeignError
	switch {
	case errors.As(err, &sys):
		return withHint(err, "unset INCUS_SOCKET and INCUS_DIR to purge the system's Incus")
	case errors.As(err, &remain):
		return withHint(err, "box never touches them: delete them with incus, or drop --purge-incus to keep Incus")
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
