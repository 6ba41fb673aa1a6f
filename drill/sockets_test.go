package drill_test

import (
	"encoding/json"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/boxtest"
)

// The net:unix-path row, for real as the unprivileged user: the drill's host socket in
// the working directory is refused with box's mediation (PASS, at tier none and full),
// and answers the sandbox with it off in a test build (BREACH). Drills of the network
// group only (--group network): the row's.
func TestDrillUnixPath(t *testing.T) {
	row := func(w *boxtest.World, tier string) drill.Result {
		t.Helper()
		r := w.Run("drill", "--backend", "bwrap", "--json", "--network", tier, "--group", "network")
		var list []drill.Result
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
			t.Fatalf("drill --network %s: exit %d, JSON: %v\n%s", tier, r.Code, err, r.Stderr)
		}
		for _, x := range list {
			if x.ID == "net:unix-path" {
				return x
			}
		}
		t.Fatalf("drill --network %s: no net:unix-path row", tier)
		return drill.Result{}
	}
	w := boxtest.NewWorld(t)
	for _, tier := range []string{"none", "full"} {
		if x := row(w, tier); x.Status != drill.Pass {
			t.Errorf("tier %s, mediation on: %s (%q), want PASS", tier, x.Status, x.Observed)
		}
	}
	off := boxtest.NewWorld(t)
	off.WithProtectionOff(t, bwrap.ProtSockets)
	if x := row(off, "none"); x.Status != drill.Breach {
		t.Errorf("mediation off: %s (%q), want BREACH", x.Status, x.Observed)
	}
}
