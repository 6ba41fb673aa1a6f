package drill_test

// The drill's link-out row (a hostile review): the sandbox makes a protected path's
// directory a link to its own ~/.claude holding hooks. Through box drill the audit moves
// the link aside (PASS); with the link guard switched off in a test build, the host's
// Claude Code session start runs the plant (BREACH).

import (
	"testing"

	"github.com/heavy-duty/box/drill"
)

const linkOutRow = "protect:link-out"

func TestDrillLinkOut(t *testing.T) {
	for _, off := range []bool{false, true} {
		w, l := labWorld(t)
		want := drill.Pass
		if off {
			w.withProtectionOff(t, "audit-links")
			want = drill.Breach
		}
		r := w.drill(l, "--network", "none", "--group", "protect")
		t.Logf("box drill, link guard off %v (exit %d): %s %q", off, r.code, r.rows[linkOutRow].Status, r.rows[linkOutRow].Observed)
		r.want(t, linkOutRow, want)
	}
}
