package drill_test

import (
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/policy"
)

// The trust row through the real box drill: PASS, and BREACH in a test build with the
// trust rule off (a tier-none run's hook is in the tier-full run's ~/.claude, and in a
// --host-port run's: host ports are reach). Every
// protected entry's derived row passes in the real sandbox. Drills of those groups only
// (--group trust,protect; then trust).
func TestDrillTrustAndEntries(t *testing.T) {
	w, l := labWorld(t)
	r := w.drill(l, "--network", "none", "--group", "trust,protect")
	t.Logf("box drill (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, drill.TrustRowID, drill.Pass)
	r.want(t, drill.TrustHostPortRowID, drill.Pass)
	for _, e := range policy.ProtectEntries() {
		r.want(t, drill.EntryProbeID(e), drill.Pass)
	}
	off := *w
	off.withProtectionOff(t, bwrap.ProtTrust)
	r = off.drill(l, "--network", "none", "--group", "trust")
	r.want(t, drill.TrustRowID, drill.Breach)
	r.want(t, drill.TrustHostPortRowID, drill.Breach)
	if r.code != 1 {
		t.Errorf("the breach did not fail the drill: exit %d", r.code)
	}
}
