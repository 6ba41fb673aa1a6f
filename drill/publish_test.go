package drill

import (
	"net/netip"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
)

// The ports rows' plan: skipped by name where box refuses ports, probed elsewhere, and
// never with the drill's own host listener among the named ports.
func TestPortsRowsPlan(t *testing.T) {
	rows := func(p *bwrap.Plan) map[string]Probe {
		var plan Plan
		d := startPorts(p, &plan, []netip.Addr{netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("127.0.0.1")}, "n0nce")
		d.stop()
		out := map[string]Probe{}
		for _, pr := range plan.Probes {
			out[pr.ID] = pr
		}
		if len(out) != 4 {
			t.Fatalf("rows: %v", plan.Probes)
		}
		return out
	}
	full := &bwrap.Plan{}
	full.Spec.Network = policy.NetFull
	for id, pr := range rows(full) {
		if pr.Skip == "" {
			t.Errorf("tier full: %s not skipped", id)
		}
	}
	none := &bwrap.Plan{}
	none.Spec.Network = policy.NetNone
	r := rows(none)
	if r[PortsHostNamedID].Skip == "" || r[PortsPublishedID].Skip == "" || r[PortsPublishedElseID].Skip == "" {
		t.Errorf("nothing forwarded: named and published rows must be skipped: %+v", r)
	}
	if o := r[PortsHostOtherID]; o.Skip != "" || len(o.Targets) != 2 || o.Want != Blocked {
		t.Errorf("the host's other loopback port is probed in every own-namespace tier: %+v", o)
	}
	none.Spec.Ports = bwrap.Ports{Publish: []policy.PortMap{{Host: 8080, Sandbox: 3000}}, HostPorts: []uint16{5432}}
	r = rows(none)
	if pr := r[PortsPublishedID]; pr.Skip != "" || len(pr.Ports) != 2 || pr.Ports[0] != 3000 || pr.Ports[1] == 3000 || pr.Ports[1] == 8080 {
		t.Errorf("published: %+v", pr)
	}
	if pr := r[PortsPublishedElseID]; len(pr.Targets) != 2 || pr.Targets[0] != "192.0.2.7:8080" {
		t.Errorf("elsewhere: the host's other address (not its loopback) and the unpublished port: %+v", pr.Targets)
	}
	if pr := r[PortsHostNamedID]; pr.Skip != "" || pr.Targets[0] != "host.box.internal:5432" {
		t.Errorf("named: %+v", pr)
	}
}
