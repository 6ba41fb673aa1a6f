package drill_test

// The ports rows (drill/publish.go) for real: box drill with a profile that publishes a
// port and names a host port, in the lab (its host namespace's loopback is the "host's";
// a named service listens there), first as built (every ports row PASS), then in a test
// build with the forwarding widened (BOX_UNSAFE_OFF=ports: the published port on every
// host address, every port of host.box.internal to the host's loopback): both blocked
// rows report BREACH.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

func TestDrillPortsWidened(t *testing.T) {
	w, l := labWorld(t)
	if err := l.ServeHTTP(lab.RoleHost, "127.0.0.1:5432", "boxlab: the named host port\n"); err != nil {
		t.Fatal(err)
	}
	w.write(filepath.Join(w.home, ".config/box/profiles/ports.toml"), "publish = [\"18088:3000\"]\nhost_ports = [5432]\n")
	ids := []string{drill.PortsHostNamedID, drill.PortsHostOtherID, drill.PortsPublishedID, drill.PortsPublishedElseID}
	// Tier none only: the forwarding is one mechanism in every tier (TestPublishReaches-
	// OnlyTheHostLoopback runs all three), and each drill costs half a minute of CI.
	for _, tier := range []string{"none"} {
		t.Run(tier, func(t *testing.T) {
			w.t = t
			r := w.drill(l, "--profile", "ports", "--network", tier, "--internet-url", "http://"+lab.InternetName+"/")
			t.Logf("box drill --profile ports --network %s (exit %d):\n%s%s", tier, r.code, r.table(), r.stderr)
			for _, id := range ids {
				r.want(t, id, drill.Pass)
			}
			if o := r.rows[drill.PortsPublishedElseID].Observed; !strings.Contains(o, "no banner on 2 other address(es)") {
				t.Errorf("the lab host's two other addresses were not dialled: %q", o)
			}
			if r.code != 0 {
				t.Errorf("exit %d, want 0", r.code)
			}
		})
	}
	t.Run("widened", func(t *testing.T) {
		w.t = t
		off := *w
		off.withProtectionOff(t, bwrap.ProtPorts)
		r := off.drill(l, "--profile", "ports", "--network", "none")
		t.Logf("widened (exit %d):\n%s%s", r.code, r.table(), r.stderr)
		r.want(t, drill.PortsHostOtherID, drill.Breach)
		r.want(t, drill.PortsPublishedElseID, drill.Breach)
		r.want(t, drill.PortsHostNamedID, drill.Pass)
		r.want(t, drill.PortsPublishedID, drill.Pass)
		for _, a := range []string{lab.HostPrivate.String(), lab.HostPublic.String()} {
			if o := r.rows[drill.PortsPublishedElseID].Observed; !strings.Contains(o, a+":18088 ANSWERS") {
				t.Errorf("widened: %s not seen answering: %q", a, o)
			}
		}
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
	})
}
