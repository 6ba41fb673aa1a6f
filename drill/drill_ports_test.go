package drill_test

// The ports rows (drill/publish.go) for real: box drill with a profile that publishes a
// port and names a host port, in the lab (its host namespace's loopback is the "host's";
// a named service listens there), first as built (every ports row PASS), then in a test
// build with the forwarding widened (BOX_UNSAFE_OFF=ports: the published port on every
// host address, every port of host.box.internal to the host's loopback): both blocked
// rows report BREACH. The drills are of the ports group (with the network group where the
// drill must pass whole: a published port is the network namespace's business): the rest
// of the drill is proven by its own tests; that it is left out, and said to be, is
// checked here (box drill --group).

import (
	"path/filepath"
	"slices"
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
	// Only the chosen groups' rows, and the summary names the groups left out.
	portsOnly := func(t *testing.T, r drillRun, groups ...string) {
		t.Helper()
		for _, row := range r.list {
			if !slices.Contains(groups, row.Group) {
				t.Errorf("--group %v: a row of group %s (%s)", groups, row.Group, row.ID)
			}
		}
		if !strings.Contains(r.stderr, "groups left out: secrets, env,") || strings.Contains(r.stderr, "ports, ssh") {
			t.Errorf("--group %v: the summary does not name the groups left out:\n%s", groups, r.stderr)
		}
	}
	// A name that is not a group is refused by name, with the groups listed: never a
	// drill of nothing.
	if r := w.inLab(l, nil, "drill", "--group", "ports,nope"); r.code != 2 || !strings.Contains(r.stderr, `"nope"`) || !strings.Contains(r.stderr, "ports, ssh, trust") {
		t.Errorf("--group ports,nope: exit %d, want 2 naming nope and the groups:\n%s", r.code, r.stderr)
	}
	// Tier none only: the forwarding is one mechanism in every tier (TestPublishReaches-
	// OnlyTheHostLoopback runs all three), and each drill costs half a minute of CI.
	for _, tier := range []string{"none"} {
		t.Run(tier, func(t *testing.T) {
			w.t = t
			r := w.drill(l, "--profile", "ports", "--network", tier, "--internet-url", "http://"+lab.InternetName+"/", "--group", "ports,network")
			portsOnly(t, r, "ports", "network")
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
		r := off.drill(l, "--profile", "ports", "--network", "none", "--group", "ports")
		portsOnly(t, r, "ports")
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
