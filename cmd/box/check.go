package main

import (
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap"
)

// runCheck prints one line per check and fails when the bwrap backend cannot run.
func runCheck(e *env) error {
	fatal := 0
	for _, r := range bwrap.HostChecks() {
		status := "ok  "
		if !r.OK {
			status = "warn"
			if r.Fatal {
				status = "FAIL"
				fatal++
			}
		}
		fmt.Fprintf(e.stdout, "%s  %-16s %s\n", status, r.Name, r.Detail)
		if !r.OK && r.Fix != "" {
			fmt.Fprintf(e.stdout, "      %-16s fix: %s\n", "", r.Fix)
		}
	}
	if fatal > 0 {
		return withHint(fmt.Errorf("the bwrap backend cannot run here (%d problem(s) above)", fatal), "apply the fixes above, then run 'box --check' again")
	}
	return nil
}
