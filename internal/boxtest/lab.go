package boxtest

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// RequireLab skips (or, under CI, fails) without what drill/lab needs.
func RequireLab(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "bwrap") {
		testenv.RequireTool(t, tool)
	}
}

// DrillRun is one box drill (or other box command) run in the lab as the world's user.
type DrillRun struct {
	Code           int
	Stdout, Stderr string
	Rows           map[string]drill.Result
	List           []drill.Result
}

// inLabGuard is how long InLab lets one box command run before it calls it hung.
const inLabGuard = 10 * time.Minute

// InLab runs box ARGS in the lab's host namespace as the world's user.
func (w *World) InLab(l *lab.Lab, stdin []byte, args ...string) DrillRun {
	w.T.Helper()
	// A guard against a hung box, not a time limit: a whole drill took more than 90 s
	// under a loaded CI (load 900) and was killed as if it had failed.
	ctx, cancel := context.WithTimeout(context.Background(), inLabGuard)
	defer cancel()
	c := l.UserCommand(ctx, w.UID, w.GID, append([]string{w.Box}, args...)...)
	c.Env = w.Env
	c.Dir = w.Proj
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	err := c.Run()
	r := DrillRun{Stdout: o.String(), Stderr: e.String()}
	if ctx.Err() != nil {
		w.T.Fatalf("box %q still running after %s: killed (a hang?)\n%s", args, inLabGuard, r.Stderr)
	}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			w.T.Fatalf("box %q: %v", args, err)
		}
		r.Code = ee.ExitCode()
	}
	return r
}

// Drill runs box drill --json with args and parses the rows.
func (w *World) Drill(l *lab.Lab, args ...string) DrillRun {
	w.T.Helper()
	r := w.InLab(l, nil, append([]string{"drill", "--backend", "bwrap", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(r.Stdout), &r.List); err != nil {
		w.T.Fatalf("drill %q: exit %d, JSON does not parse: %v\nstdout:\n%s\nstderr:\n%s", args, r.Code, err, r.Stdout, r.Stderr)
	}
	r.Rows = map[string]drill.Result{}
	for _, x := range r.List {
		r.Rows[x.ID] = x
	}
	return r
}

// Want checks row id has status s.
func (r DrillRun) Want(t *testing.T, id string, s drill.Status) {
	t.Helper()
	x, ok := r.Rows[id]
	if !ok {
		t.Errorf("no row %s", id)
		return
	}
	if x.Status != s {
		t.Errorf("%s: %s (observed %q), want %s", id, x.Status, x.Observed, s)
	}
}

// Table is the drill's rows as box drill prints them.
func (r DrillRun) Table() string {
	var b bytes.Buffer
	drill.Render(&b, r.List)
	return b.String()
}
