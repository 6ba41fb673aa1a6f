package drill_test

// Special-purpose ranges a host may route to a service of its own: the lab's LAN host
// also answers on 198.18.0.10 (benchmarking, where fake-IP proxies live) and 192.0.0.8
// (IETF protocol assignments: DS-Lite, NAT64 discovery), routed by the router. The
// internet tier must reach neither; with them out of the rejected ranges (test build,
// BOX_UNSAFE_OFF=special-ranges: as before session 12) the row is BREACH.

import (
	"slices"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

func TestDrillSpecialRanges(t *testing.T) {
	if !slices.Equal(drill.SpecialTargets, lab.Special) {
		t.Fatalf("the drill dials %v, the lab answers on %v", drill.SpecialTargets, lab.Special)
	}
	w, l := labWorld(t)
	inet := []string{"--network", "internet", "--group", "network", "--internet-url", "http://" + lab.InternetName + "/"}
	r := w.drill(l, inet...)
	t.Logf("tier internet (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:special-ranges", drill.Pass)
	r.want(t, "net:internet", drill.Pass)

	off := *w
	off.withProtectionOff(t, bwrap.ProtSpecialRanges)
	r = off.drill(l, inet...)
	t.Logf("tier internet, special ranges not rejected (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:special-ranges", drill.Breach)
	r.want(t, "net:internet", drill.Pass)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
}
