package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

type doctorOptions struct {
	json    bool
	unitDir string
}

func newDoctorCmd(e *env) *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:     "doctor [--json]",
		Short:   "check the vm backend's isolation stack on this host, with a fix for each failure",
		GroupID: groupHost,
		Long:    helpText("doctor"),
		Example: helpText("doctor.example"),
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return runDoctor(e, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print the checks as a JSON array")
	cmd.Flags().StringVar(&o.unitDir, "unit-dir", host.DefaultUnitDir, "where setup-host wrote the boot unit")
	return cmd
}

func runDoctor(e *env, o *doctorOptions) error {
	if err := incusAbsent(e); err != nil {
		return err
	}
	ctx, cancel := vm.SignalContext() // Ctrl-C and SIGTERM cancel it
	defer cancel()
	if e.remoteName() == "" && host.IsUserSocket(e.localSocket()) { // a granted user: their side of it
		return printChecks(e, o, host.UserChecks(ctx, e.localSocket(), vm.Placement(e.getenv)))
	}
	g := grantHost(e)
	defer g.Client.Close()
	return printChecks(e, o, g.AllChecks(ctx, host.DoctorOptions{UnitDir: o.unitDir, Exe: host.Exe()}))
}

// printChecks prints doctor's lines (or --json) and fails when any check failed.
func printChecks(e *env, o *doctorOptions, checks []host.Check) error {
	if o.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(checks); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, ck := range checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ck.Status, ck.Name, ck.Detail)
			if ck.Fix != "" && ck.Status != host.OK {
				fmt.Fprintf(tw, "\t\tfix: %s\n", ck.Fix)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	n := 0
	for _, ck := range checks {
		if ck.Status == host.Fail {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", n, len(checks))
	}
	fmt.Fprintf(e.stderr, "box: doctor: all %d checks passed\n", len(checks))
	return nil
}
