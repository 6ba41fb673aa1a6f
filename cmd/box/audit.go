package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
)

// recoverAudits finishes what earlier runs in the current directory left of their
// audits (box was killed, or a finding could not be neutralised), before anything reads
// the tree for this run. It refuses the run while a finding is still in place.
func recoverAudits(e *env, w io.Writer) error {
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	reps, err := bwrap.RecoverAudits(wd, e.dataHome())
	if err != nil {
		return err
	}
	for _, r := range reps {
		fmt.Fprintf(w, "box: audit: an earlier run in %s left its audit unfinished (box was killed, or the audit failed); auditing it now\n", wd)
		// An incomplete audit is said (Finish prints it) and the run goes on.
		if err := bwrap.Finish(w, r, 0); err != nil && r.Failed() {
			return err
		}
	}
	return nil
}

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
