package main

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap"
)

// checkJSON is one check in box --check --json (docs/json.md).
type checkJSON struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn, fail
	Fatal  bool   `json:"fatal"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
	Cause  string `json:"cause"` // the user-namespace check's cause (docs/bwrap.md), else ""
}

// runCheck prints one line per check (or, asJSON, a JSON array) and fails when the bwrap
// backend cannot run.
func runCheck(e *env, asJSON bool) error {
	fatal := 0
	noUserns := false
	out := []checkJSON{}
	for _, r := range bwrap.HostChecks() {
		c := checkJSON{Name: r.Name, Status: r.Status(), Fatal: r.Fatal, Detail: r.Detail, Cause: r.CauseName()}
		if !r.OK {
			c.Fix = cmp.Or(usernsHint(r.Cause), r.Fix)
			noUserns = noUserns || c.Cause != ""
		}
		if c.Status == "fail" {
			fatal++
		}
		out = append(out, c)
	}
	if asJSON {
		b, err := json.MarshalIndent(out, "", "    ")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, string(b))
	} else {
		for _, c := range out {
			status := map[string]string{"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[c.Status]
			fmt.Fprintf(e.stdout, "%s  %-16s %s\n", status, c.Name, c.Detail)
			if c.Fix != "" {
				fmt.Fprintf(e.stdout, "      %-16s fix: %s\n", "", c.Fix)
			}
		}
	}
	if fatal > 0 {
		hint := "apply the fixes above, then run 'box --check' again"
		if noUserns {
			// box run says it where it fails; --check is where a user looks first
			// (field review, session 16: it named no way to work meanwhile).
			hint += "\n" + landlockOptIn
		}
		return withHint(fmt.Errorf("the bwrap backend cannot run here (%d problem(s) above)", fatal), hint)
	}
	return nil
}
