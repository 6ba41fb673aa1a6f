package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
)

// withAudit runs start (a sandbox launch of p) inside the post-run audit: the snapshot
// before, and after the command ended however it ended (its code, a signal's 128+N, or
// a launch error), the comparison that moves aside whatever the sandbox left for the
// host to execute, reported on w. A failed audit is an *bwrap.AuditError (exit 125);
// otherwise the command's code and error pass through unchanged.
func withAudit(e *env, w io.Writer, p *bwrap.Plan, start func() (int, error)) (int, *postrun.Report, error) {
	audit, err := bwrap.BeginAudit(p.AuditInput(), e.dataHome())
	if err != nil {
		return 1, nil, err
	}
	for _, r := range audit.Recovered {
		fmt.Fprintf(w, "box: audit: an earlier run in %s left its audit unfinished (box was killed, or the audit failed); auditing it now\n", p.Spec.Workdir)
		// Launch only on a tree left clean: a finding still in place refuses the run;
		// an incomplete audit is said (Finish prints it) and the run goes on.
		if err := bwrap.Finish(w, r, 0); err != nil && r.Failed() {
			audit.End()
			return 1, nil, err
		}
	}
	code, err := start()
	// A second Ctrl-C (or the terminal closing) must not stop the audit half way: it is
	// short, and what it leaves undone would wait for the next run.
	hold := make(chan os.Signal, 1)
	signal.Notify(hold, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	rep := audit.End()
	signal.Stop(hold)
	if aerr := bwrap.Finish(w, rep, code); aerr != nil {
		return code, rep, aerr
	}
	return code, rep, err
}
