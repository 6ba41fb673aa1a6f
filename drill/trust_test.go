package drill_test

import (
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/policy"
)

// The trust rows through the real box drill: PASS, and BREACH in a test build with the
// trust rule off (a tier-none run's hook is in the tier-full run's ~/.claude, in a
// --host-port run's: host ports are reach, and a bwrap run's in a Landlock-mode run's),
// and with the one-session rule of bwrap boxes
// off (a second session starts beside one whose sandbox swaps a mount point's parent for
// a link out of the box, and its bwrap may make the mount point outside), and with the
// launch guard off (a second box run launches beside one whose sandbox swaps a nested
// repository's work tree for a link, and its read-only bind may land at the far end; a
// second run from another project mounts read-write what a first run's sandbox writes), and
// with launch warnings unescaped (a directory named with an OSC 2 sequence reaches the
// launch's stderr raw through its .envrc note). Every
// protected entry's derived row passes in the real sandbox. Drills of those groups only
// (--group trust,protect; then trust).
func TestDrillTrustAndEntries(t *testing.T) {
	w, l := labWorld(t)
	r := w.drill(l, "--network", "none", "--group", "trust,protect")
	t.Logf("box drill (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, drill.TrustRowID, drill.Pass)
	r.want(t, drill.TrustHostPortRowID, drill.Pass)
	r.want(t, drill.TrustLandlockRowID, drill.Pass)
	r.want(t, drill.BoxSessionRowID, drill.Pass)
	r.want(t, drill.LinkSwapRowID, drill.Pass)
	r.want(t, drill.WarnNamesID, drill.Pass)
	r.want(t, drill.MountGuardRowID, drill.Pass)
	for _, e := range policy.ProtectEntries() {
		r.want(t, drill.EntryProbeID(e), drill.Pass)
	}
	off := *w
	offs := bwrap.ProtTrust + "," + bwrap.ProtBoxSession + "," + bwrap.ProtLaunchGuard + "," + bwrap.ProtWarnEscape
	off.withProtectionOff(t, offs)
	r = off.drill(l, "--network", "none", "--group", "trust")
	t.Logf("box drill, %s off (exit %d):\n%s", offs, r.code, r.table())
	r.want(t, drill.TrustRowID, drill.Breach)
	r.want(t, drill.TrustHostPortRowID, drill.Breach)
	r.want(t, drill.TrustLandlockRowID, drill.Breach)
	r.want(t, drill.BoxSessionRowID, drill.Breach)
	r.want(t, drill.LinkSwapRowID, drill.Breach)
	r.want(t, drill.WarnNamesID, drill.Breach)
	r.want(t, drill.MountGuardRowID, drill.Breach)
	if r.code != 1 {
		t.Errorf("the breach did not fail the drill: exit %d", r.code)
	}
}
