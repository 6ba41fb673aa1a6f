package bwrap_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/testenv"
)

// Nothing of the sandbox runs once box run has returned: every process of its pid
// namespace has ended before the post-run audit looks. Before (field review, session 15)
// box audited as soon as bwrap had exited, which bwrap does once its pid 1 has reported
// the command's code, while the other processes of the sandbox still ran until pid 1 was
// scheduled again to die: a descendant wrote sub/.git/hooks/pre-commit after the audit
// had moved the repository aside, and the host's git commit there ran it. The attack is
// a race the sandbox widens (its pid 1 slowed); it is tried several times, and a hook
// found once is the breach.
func TestSandboxEndsBeforeAudit(t *testing.T) {
	testenv.RequireTool(t, "python3")
	testenv.RequireTool(t, "taskset")
	testenv.RequireTool(t, "chrt")
	w := newWorld(t)
	// The drill's attack (drill.SandboxEndScript), run as box run runs any command: the
	// descendant writes .git/hooks/post-checkout in sub, a repository it made.
	sub := filepath.Join(w.proj, "sub")
	for attempt := range 16 {
		os.RemoveAll(sub)
		os.Remove(sub + ".started")
		os.Remove(sub + ".fifo")
		r := w.run("run", "-y", "--", "sh", "-c", drill.SandboxEndScript, "sandbox-end", sub)
		if r.code != 0 || !strings.Contains(r.stdout, "SANDBOX-END-STARTED") {
			t.Fatalf("attempt %d: the command did not start its writer: exit %d\n%s%s", attempt, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "moved the repository's .git aside") {
			t.Fatalf("attempt %d: the audit did not move the planted repository aside:\n%s", attempt, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(sub, ".git/hooks/post-checkout")); err == nil {
			t.Fatalf("attempt %d: a process of the sandbox wrote sub/.git/hooks/post-checkout after the post-run audit had moved sub/.git aside (box run had returned)", attempt)
		}
		if _, err := os.Lstat(filepath.Join(sub, ".git")); err == nil {
			t.Fatalf("attempt %d: a process of the sandbox made sub/.git again after the post-run audit had moved it aside", attempt)
		}
	}
}

// The drill's kernel:sandbox-end row is PASS as shipped and BREACH with the wait for
// the sandbox's last process off (a test build).
func TestDrillSandboxEndRow(t *testing.T) {
	testenv.RequireTool(t, "python3")
	w := newWorld(t)
	row := func() (drill.Result, int) {
		r := w.run("drill", "--group", "kernel", "--json")
		var rs []drill.Result
		if err := json.Unmarshal([]byte(r.stdout), &rs); err != nil {
			t.Fatalf("box drill --json: %v (exit %d)\n%s", err, r.code, r.stderr)
		}
		for _, x := range rs {
			if x.ID == drill.SandboxEndID {
				return x, r.code
			}
		}
		t.Fatalf("no %s row (exit %d)\n%s", drill.SandboxEndID, r.code, r.stderr)
		return drill.Result{}, 0
	}
	if got, _ := row(); got.Status != drill.Pass {
		t.Errorf("%s: %s %s", got.ID, got.Status, got.Observed)
	} else {
		t.Logf("as shipped: %s", got.Observed)
	}
	w.withProtectionOff(t, bwrap.ProtSandboxEnd)
	got, code := row()
	if got.Status != drill.Breach {
		t.Errorf("protection off: %s: %s %s", got.ID, got.Status, got.Observed)
	} else {
		t.Logf("protection off: %s", got.Observed)
	}
	if code != 1 {
		t.Errorf("the breach did not fail the drill: exit %d", code)
	}
}
