package drill_test

import (
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
)

// The second-session row through the real box drill: a second session of a bwrap box
// beside one whose sandbox swaps a mount point's parent for a link out of the box is
// refused (PASS); in a test build with the one-session rule off it starts (BREACH), and
// its bwrap may make the mount point outside.
func TestDrillBoxSecondSession(t *testing.T) {
	w, l := labWorld(t)
	r := w.drill(l, "--network", "none", "--group", "trust")
	t.Logf("box drill (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, drill.BoxSessionRowID, drill.Pass)
	off := *w
	off.withProtectionOff(t, bwrap.ProtBoxSession)
	r = off.drill(l, "--network", "none", "--group", "trust")
	t.Logf("box drill, %s off (exit %d):\n%s", bwrap.ProtBoxSession, r.code, r.table())
	r.want(t, drill.BoxSessionRowID, drill.Breach)
	if r.code != 1 {
		t.Errorf("the breach did not fail the drill: exit %d", r.code)
	}
}
