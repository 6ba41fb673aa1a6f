package bwrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/phase"
	"github.com/heavy-duty/box/internal/termtext"
	"golang.org/x/sys/unix"
)

// Session is one bwrap launch, the sequence box run, the bwrap boxes and the drill all
// go through: resolve (Gather, then the pure Resolve), prepare, the environment's audit
// report, the question, the launch under the post-run audit, and the command's exit
// code. It knows nothing of flags: its inputs are these fields.
type Session struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StdinTTY reports whether Stdin is a terminal: the question is asked only there
	// (nil: never a terminal).
	StdinTTY func() bool
	// Yes skips the question; the report still prints and its rules still apply.
	Yes bool
	// Outside is the operator's session, as Gather reads it.
	Outside Outside
	// InternetHelper is $BOX_INTERNET_HELPER ("" lets box choose).
	InternetHelper string
	// NoTTY: the command gets no terminal, even on one (box exec without -t).
	NoTTY bool
	// DryRun makes Run stop once the plan is prepared: nothing is launched.
	DryRun bool
	// Recover makes Run first finish the audits earlier runs in the tree left unfinished
	// (RecoverAudits), once the tree is held: nothing reads it while another sandbox lives.
	Recover bool
	// AuditOut is where the post-run audit reports (nil: Stderr).
	AuditOut io.Writer
	// Quiet (-q): nothing of box's own on stderr unless something is flagged. With Yes,
	// the environment's audit table only when it flags something; no notes (a recovered
	// audit that found nothing, the allowlist's opening line). Warnings, findings and
	// errors still print.
	Quiet bool
	// Ended, when set, is called once the sandbox has ended and before the post-run
	// audit looks (the drill's kernel:sandbox-end row looks there for a process of the
	// sandbox still running).
	Ended func()
}

// Ran is what Run did: the plan and its argv (all a dry run has), and the
// sandboxed command's exit code (its own, or 128+N when signal N ended it).
type Ran struct {
	Plan     *Plan
	Prepared Prepared
	Code     int
}

// GatherError is a failure to gather the host's facts for a request (before anything
// is resolved): a persistent box says which directory it is bound to.
type GatherError struct{ Err error }

func (e *GatherError) Error() string { return e.Err.Error() }
func (e *GatherError) Unwrap() error { return e.Err }

// Run is the whole sequence for box run and the bwrap boxes: resolve, prepare, then
// (unless DryRun) Launch.
func (s *Session) Run(r Request) (Ran, error) {
	if err := s.refuseNested(); err != nil {
		return Ran{}, err // before the tree's hold, which would wait for the outer run
	}
	if !s.DryRun {
		warmSignals()
		// No other sandbox on the tree while this run reads it and bwrap mounts in it
		// (launchguard.go): wait for the runs holding it. The run then uses the tree's
		// path as held, never resolving it again.
		tree, unguard, err := s.guardTree(r)
		if err != nil {
			return Ran{}, err
		}
		defer unguard()
		r.Tree = tree
		if s.Recover {
			if err := s.recoverAudits(tree); err != nil {
				return Ran{}, err
			}
		}
	}
	p, err := s.Resolve(r)
	if err != nil {
		return Ran{}, err
	}
	if !s.DryRun {
		unguard, err := s.guardMounts(p, r.Tree) // launchguard.go
		if err != nil {
			return Ran{}, err
		}
		defer unguard()
	}
	out := Ran{Plan: p}
	if out.Prepared, err = s.Prepare(p); err != nil || s.DryRun {
		return out, err
	}
	out.Code, err = s.Launch(p, out.Prepared)
	return out, err
}

// NestedError: box was asked to launch from inside one of its own sandboxes (BOX_SANDBOX
// set, as box sets it there). A sandbox inside one cannot be made (no user namespace
// there), and the launch would wait for ever for the outer run's hold on the tree (field
// check, session 19: an agent's `box run` inside `box run` hung).
type NestedError struct{ Sandbox string }

func (e *NestedError) Error() string {
	return fmt.Sprintf("this is already a box sandbox (BOX_SANDBOX=%s): box cannot launch another inside it", e.Sandbox)
}

// refuseNested is a *NestedError for a launch inside a box sandbox (not a dry run: it
// launches nothing). Every launch resolves a plan (Resolve) first; Run asks before that.
func (s *Session) refuseNested() error {
	if s.DryRun {
		return nil
	}
	return nestedIn(s.Outside.Environ)
}

// nestedIn is a *NestedError when environ is a box sandbox's.
func nestedIn(environ []string) error {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "BOX_SANDBOX="); ok && v != "" {
			return &NestedError{Sandbox: v}
		}
	}
	return nil
}

// Resolve gathers the host's facts for r (a failure is a *GatherError), resolves the
// plan (pure: every decision is made here) and prints its warnings. It starts nothing.
func (s *Session) Resolve(r Request) (*Plan, error) {
	if err := s.refuseNested(); err != nil {
		return nil, err
	}
	facts, err := Gather(r, s.Outside)
	if err != nil {
		return nil, &GatherError{err}
	}
	p, err := Resolve(r, facts)
	if err != nil {
		return nil, err
	}
	phase.Mark("resolve")
	if err := p.resolveIsolation(r); err != nil {
		return nil, err
	}
	if err := p.checkPortsIsolation(); err != nil { // publish.go
		return nil, err
	}
	for _, w := range p.Warnings {
		// Warnings name paths the sandbox chose (a directory an earlier run made): shown
		// escaped, so no name drives the operator's terminal (hostile check, session 19:
		// a directory named with an OSC sequence reached it raw through a launch note).
		if !protectionOff(ProtWarnEscape) {
			w = termtext.Escape(w, false)
		}
		fmt.Fprintf(s.Stderr, "box: warning: %s\n", w)
	}
	return p, nil
}

// ProtWarnEscape names the escaping of launch warnings among the protections a test
// build can switch off, so the drill's trust:warning-names row can be shown to catch
// a tree's name reaching the terminal raw.
const ProtWarnEscape = "warn-escape"

// Prepare makes p ready to launch (Prepare): the tier's helper and bwrap's argv.
func (s *Session) Prepare(p *Plan) (Prepared, error) {
	pr, err := Prepare(p, s.InternetHelper)
	pr.NoTTY = s.NoTTY
	phase.Mark("prepare")
	pr.Quiet, pr.Ended = s.Quiet, s.Ended
	return pr, err
}

// Launch refuses root, prints the environment's audit, asks (unless Yes), and runs the
// sandbox under the post-run audit. The code is the command's; a failed audit is an
// *AuditError (ExitAudit).
func (s *Session) Launch(p *Plan, pr Prepared) (int, error) {
	if err := p.RefuseRoot(); err != nil {
		return 1, err
	}
	bin, err := p.lookBwrap()
	if err != nil {
		return 1, err
	}
	if err := p.CheckCommand(); err != nil {
		return 1, err
	}
	if !s.Quiet || !s.Yes || len(p.Findings) > 0 {
		envaudit.Report(s.Stderr, p.Vars, p.Findings)
		p.ReportGitIdentity(s.Stderr)
	}
	p.ReportPorts(s.Stderr, s.Quiet) // publish.go
	if err := s.confirm(); err != nil {
		return 1, err
	}
	phase.Mark("checks")
	code, _, err := s.supervise(p, pr, bin)
	return code, err
}

// Supervise runs the sandbox under the post-run audit, without the environment's report
// or the question (the drill: its command is box's own probe runner), and returns the
// audit's report too.
func (s *Session) Supervise(p *Plan, pr Prepared) (int, *postrun.Report, error) {
	bin, err := p.lookBwrap()
	if err != nil {
		return 1, nil, err
	}
	return s.supervise(p, pr, bin)
}

// confirm asks y/N on a terminal; without one, and without Yes, it refuses.
func (s *Session) confirm() error {
	if s.Yes {
		return nil
	}
	if s.StdinTTY == nil || !s.StdinTTY() {
		return errs.WithHint(errors.New("refusing to launch: no terminal to confirm the environment above"),
			"review the list above and re-run with -y to launch without asking")
	}
	fmt.Fprint(s.Stderr, "box: launch the sandbox with this environment? [y/N] ")
	line, err := bufio.NewReader(s.Stdin).ReadString('\n')
	if err != nil {
		// Ctrl-D: the terminal echoed no newline, and box's refusal would follow the
		// question on its line (field review, session 18).
		fmt.Fprintln(s.Stderr)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errs.WithHint(errors.New("not launched"), "answer y to launch, or pass -y")
}

// supervise runs the launch of p inside the post-run audit: the snapshot before, and
// after the command ended however it ended (its code, a signal's 128+N, or a launch
// error), the comparison that moves aside whatever the sandbox left for the host to
// execute, reported on AuditOut. A failed audit is an *AuditError (exit 125); otherwise
// the command's code and error pass through unchanged.
func (s *Session) supervise(p *Plan, pr Prepared, bin string) (int, *postrun.Report, error) {
	w := s.AuditOut
	if w == nil {
		w = s.Stderr
	}
	audit, err := BeginAudit(p.AuditInput(), s.Outside.DataHome, p.ProtectLock, p.Reach)
	if err != nil {
		return 1, nil, err
	}
	phase.Mark("audit:before")
	// A second Ctrl-C (or the terminal closing) must not stop the audit half way: it is
	// short, and what it leaves undone would wait for the next run. The signals are held
	// from the sandbox's end (Launch.Ended), while Run still catches them: the runtime
	// then neither enables them again here nor disables them when Run lets go, each a
	// round trip to its signal thread (issue 24), and no Ctrl-C between Run's return and
	// the audit finds box without a handler. A launch that failed before the sandbox
	// ended never called Ended: the Notify after Start holds them then.
	hold := make(chan os.Signal, 1)
	holdSignals := func() { signal.Notify(hold, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT) }
	if ended := pr.Ended; ended != nil {
		pr.Ended = func() { holdSignals(); ended() }
	} else {
		pr.Ended = holdSignals
	}
	code, err := p.Start(pr, bin, s.Stdin, s.Stdout, s.Stderr)
	phase.Mark("sandbox")
	holdSignals() // a no-op when Ended held them
	rep := audit.End()
	phase.Mark("audit:after")
	// Held until the report is said too: a Ctrl-C while it is written (a slow terminal,
	// a full pipe) killed box with the findings moved aside unnamed and 130 for the code.
	aerr := Finish(w, rep, code)
	signal.Stop(hold)
	if aerr != nil {
		return code, rep, aerr
	}
	return code, rep, err
}

// warmSignals starts the runtime's signal thread while the run is gathered, off the
// launch's path: Run's Notify then waits neither for that thread to be made nor for
// SIGWINCH to be enabled, nor its Stop for SIGWINCH to be disabled (issue 24). SIGWINCH
// alone is caught: its default is to be ignored, and caught it only lands in a channel
// nobody reads, so box ends on no signal it did not end on before.
func warmSignals() {
	warmOnce.Do(func() {
		go signal.Notify(make(chan os.Signal, 1), syscall.SIGWINCH)
	})
}

var warmOnce sync.Once

// RecoverAudits finishes what earlier runs in the current directory left of their
// audits (box was killed, or a finding could not be neutralised), before anything reads
// the tree for this run. It refuses the run while a finding is still in place.
func (s *Session) RecoverAudits() error {
	// The kernel's path, as the launch guard's: $PWD resolved by path races a sandbox
	// swapping a directory on it for a link.
	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	return s.recoverAudits(wd)
}

func (s *Session) recoverAudits(wd string) error {
	reps, err := RecoverAudits(wd, s.Outside.DataHome)
	if err != nil {
		return err
	}
	for _, r := range reps {
		if s.Quiet && len(r.Findings) == 0 && r.Incomplete == "" && r.Err() == nil {
			continue // it found nothing: a note, not a finding
		}
		fmt.Fprintf(s.Stderr, "box: audit: an earlier run in %s left its audit unfinished (box was killed, or the audit failed); auditing it now\n", wd)
		// An incomplete audit is said (Finish prints it) and the run goes on.
		if err := Finish(s.Stderr, r, 0); err != nil && r.Failed() {
			return err
		}
	}
	return nil
}
