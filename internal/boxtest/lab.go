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

// InLab runs box ARGS in the lab's host namespace as the world's user.
func (w *World) InLab(l *lab.Lab, stdin []byte, args ...string) DrillRun {
	w.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
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
