package main

import (
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap"
)

// printLandlockDryRun is --dry-run's plan in the Landlock mode (bwrap.Plan.LandlockLines)
// and its warnings.
func printLandlockDryRun(e *env, p *bwrap.Plan) {
	for _, l := range p.LandlockLines() {
		fmt.Fprintln(e.stdout, l)
	}
	for _, f := range p.Findings {
		fmt.Fprintf(e.stderr, "box: warning: %s: %s\n", f.Name, f.Reason)
	}
}
