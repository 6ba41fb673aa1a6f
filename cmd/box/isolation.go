package main

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/envaudit"
)

// printLandlockDryRun is --dry-run's plan in the Landlock mode: the rules in place of
// bwrap's argv.
func printLandlockDryRun(e *env, p *bwrap.Plan) {
	lp := p.LandlockPlan()
	fmt.Fprintf(e.stdout, "landlock: read-only %s\n", strings.Join(lp.ReadOnly, " "))
	fmt.Fprintf(e.stdout, "landlock: read-write %s\n", strings.Join(lp.ReadWrite, " "))
	fmt.Fprintf(e.stdout, "landlock: devices %s\n", strings.Join(lp.Devices, " "))
	fmt.Fprintf(e.stdout, "landlock: network tier %s (sockets: AF_UNIX only; TCP bind and connect refused)\n", lp.Tier)
	fmt.Fprintf(e.stdout, "landlock: rlimits nproc %d, address space %d bytes\n", lp.Nproc, lp.AddrSpace)
	fmt.Fprintf(e.stdout, "command: %s\n", strings.Join(p.Spec.Command, " "))
	fmt.Fprintf(e.stdout, "env: %s\n", strings.Join(envaudit.Names(p.Vars), " "))
	if p.Spec.Seccomp != nil {
		fmt.Fprintf(e.stdout, "seccomp: %s\n", p.Spec.Seccomp.Describe())
	}
	for _, l := range p.IsolationLines() {
		fmt.Fprintln(e.stdout, l)
	}
	for _, f := range p.Findings {
		fmt.Fprintf(e.stderr, "box: warning: %s: %s\n", f.Name, f.Reason)
	}
}
