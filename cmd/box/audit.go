package main

import (
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap"
)

// withAudit runs start (a sandbox launch of p) inside the post-run audit: the snapshot
// before, and after the command ended however it ended (its code, a signal's 128+N, or
// a launch error), the comparison that moves aside whatever the sandbox left for the
// host to execute. A failed audit is an *bwrap.AuditError (exit 125); otherwise the
// command's code and error pass through unchanged.
func withAudit(e *env, p *bwrap.Plan, start func() (int, error)) (int, error) {
	audit, err := bwrap.BeginAudit(p.AuditInput(), e.dataHome())
	if err != nil {
		return 1, err
	}
	for _, r := range audit.Recovered {
		fmt.Fprintf(e.stderr, "box: audit: an earlier run in %s ended before its audit (box was killed); auditing it now\n", p.Spec.Workdir)
		if err := bwrap.Finish(e.stderr, r, 0); err != nil {
			audit.End()
			return 1, err
		}
	}
	code, err := start()
	if aerr := bwrap.Finish(e.stderr, audit.End(), code); aerr != nil {
		return code, aerr
	}
	return code, err
}
