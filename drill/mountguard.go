package drill

// trust:rw-mount-second-run: a profile's read-write mount is a tree the run writes, as its
// working directory is, and the post-run audit judges a run against a snapshot of it:
// two sandboxes writing one mount at once can each hide what it plants from the other's
// audit. box holds every read-write directory mount for as long as the run and refuses a
// second run, from another working directory, whose profile mounts it too
// (launchguard.go). The row starts a first run, a bwrap box of its own with a scratch
// directory mounted read-write, whose sandbox stays until told to stop, and a second one
// beside it, another box with the same mount: PASS when the second is refused, naming
// the mount; BREACH when it launched.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// MountGuardRowID is the row's id.
const MountGuardRowID = "trust:rw-mount-second-run"

// mountGuardRow runs both runs with the drilled plan's template and isolation.
func (b *Bwrap) mountGuardRow(p *bwrap.Plan) Result {
	r := Result{ID: MountGuardRowID, Group: "trust",
		Probe:    "a second run, from another working directory, mounting read-write a directory a first run's sandbox writes",
		Expected: "the second run is refused while the first holds the mount"}
	fail := func(format string, a ...any) Result {
		r.Status, r.Observed = Error, fmt.Sprintf(format, a...)
		return r
	}
	if p.Isolation.Landlock() {
		// Two working directories in one drill process need two boxes, which the
		// Landlock mode cannot give; its runs go through the same guard.
		r.Status, r.Observed = Skip, "the Landlock mode has no bwrap boxes: the row's two runs need a working directory each"
		return r
	}
	scratch, err := scratchDirs("box-drill-rwmount-", "data", "shared", "home1", "home2", "proj1", "proj2", "inst1", "inst2") // linkswap.go
	if err != nil {
		return fail("scratch directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	shared := filepath.Join(scratch, "shared")
	r.Targets = []string{shared}
	prof := &profiles.Profile{Name: "box-drill-rwmount", Backend: profiles.BackendBwrap, Network: policy.NetNone,
		Template: p.Template.Name, Source: "the drill", Pids: p.Profile.Pids,
		Mounts: []profiles.Mount{{Path: shared, Target: shared, Mode: "rw"}}}
	// Each run is a persistent box of its own, so its working directory is its project
	// (a run's tree is never the caller's: the launch guard holds the one it opened).
	run := func(n, script string, out, errb *lockedBuf) error {
		s := *b.Session
		s.Outside.DataHome, s.Yes, s.DryRun, s.Quiet = filepath.Join(scratch, "data"), true, false, true
		s.Stdin, s.Stdout, s.Stderr, s.AuditOut, s.StdinTTY = bytes.NewReader(nil), out, errb, errb, nil
		_, err := s.Run(bwrap.Request{Profile: prof, Template: p.Template, Network: string(policy.NetNone), AllowRoot: p.AllowRoot,
			Isolation: string(p.Isolation.Mode), Command: []string{"sh", "-c", script},
			Persistent: &bwrap.Persistent{Name: "drill-rwmount-" + n, Home: filepath.Join(scratch, "home"+n),
				Instance: filepath.Join(scratch, "inst"+n), Workdir: filepath.Join(scratch, "proj"+n)}})
		return err
	}
	// The first run's sandbox writes the mount until STOP appears there.
	var out1, err1 lockedBuf
	first := make(chan error, 1)
	go func() {
		first <- run("1", fmt.Sprintf(`cd %q && : > READY && until [ -e STOP ]; do : > planting; sleep 0.05; done`, shared), &out1, &err1)
	}()
	stopFirst := func() error {
		os.WriteFile(filepath.Join(shared, "STOP"), nil, 0o600)
		return <-first
	}
	if ended, err := awaitReady(filepath.Join(shared, "READY"), first); ended {
		return fail("the first run ended before its sandbox started: %v %s", err, finalLine(err1.String()))
	} else if err != nil {
		stopFirst()
		return fail("the first run's sandbox %v", err)
	}
	var out2, err2 lockedBuf
	second := make(chan error, 1)
	go func() { second <- run("2", "echo LAUNCHED", &out2, &err2) }()
	// The guard refuses at once; a second run still there after a minute (waiting for
	// the first, or stuck) must not hang the drill: the first is stopped, and the row
	// says what it saw rather than guess.
	var secondErr error
	returned, waited := false, false
	select {
	case secondErr = <-second:
		returned = true
	case <-time.After(time.Minute):
		waited = !strings.Contains(out2.String(), "LAUNCHED") // else slow, but beside it
	}
	if err := stopFirst(); err != nil {
		return fail("the first run: %v %s", err, finalLine(err1.String()))
	}
	if !returned {
		secondErr = <-second
	}
	var held *bwrap.MountHeldError
	switch {
	case waited:
		return fail("the second run had neither launched nor been refused after a minute; it ended once the first was stopped: %v %s", secondErr, finalLine(err2.String()))
	case strings.Contains(out2.String(), "LAUNCHED"):
		r.Status, r.Observed = Breach, "the second run launched while the first run's sandbox wrote "+shared+": two audits each judged the mount against a snapshot the other run's sandbox was changing"
	case errors.As(secondErr, &held):
		r.Status, r.Observed = Pass, "the second run was refused: "+held.Error()
	default:
		return fail("the second run neither launched nor was refused for the mount: %v %s", secondErr, finalLine(err2.String()))
	}
	return r
}
