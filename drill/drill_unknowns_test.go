package drill_test

// The drill's unreadable-repository row (issue 19, breach 1): through box drill the audit
// grants itself the modes to list the mode-111 directory and moves the repository aside
// (PASS); with that switched off in a test build, the host's git status runs the plant
// (BREACH).

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/testenv"
)

const hiddenRepoRow = "host-exec:unreadable-repo"

func TestDrillHiddenRepo(t *testing.T) {
	testenv.RequireTool(t, "git")
	for _, off := range []bool{false, true} {
		w, l := labWorld(t)
		want := drill.Pass
		if off {
			w.withProtectionOff(t, "audit-modes")
			want = drill.Breach
		}
		// The group of the rows judged; the whole drill's clean-up is TestDrillHostExec's.
		r := w.drill(l, "--network", "none", "--group", "host-exec")
		t.Logf("box drill, modes off %v (exit %d): %s %q", off, r.code, r.rows[hiddenRepoRow].Status, r.rows[hiddenRepoRow].Observed)
		r.want(t, hiddenRepoRow, want)
		r.want(t, hostExecRow, drill.Pass) // the audit itself is on
		if ents, _ := filepath.Glob(filepath.Join(w.proj, ".box-drill-*")); len(ents) != 0 {
			t.Errorf("left in the project: %v", ents)
		}
		if !off {
			_, qdir := auditDirs(w)
			if q, _ := os.ReadDir(qdir); len(q) != 0 {
				t.Errorf("left in the quarantine: %v", q)
			}
		}
	}
}
