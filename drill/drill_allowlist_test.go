package drill_test

// box drill --network allowlist, for real in the lab, and every row of the allowlist
// contract shown to BREACH with its protection off: the internet tier (no allowlist, no
// UDP filter) and tier full (no rebinding check) judged as allowlist, and the probe
// runner outside any sandbox (ICMP).

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

// allowlistDrillArgs are the lab's targets for the allowlist rows.
var allowlistDrillArgs = []string{
	"--internet-url", "http://denied.test/", "--allowed-url", "http://allowed.test/",
	"--rebind-url", "http://" + lab.LANName + "/", "--rebind-url", "http://" + lab.MetadataName + "/",
	"--udp", lab.Internet.String() + ":7", "--lan", lab.LANHost.String() + ":80",
}

var allowlistRows = []string{"net:internet", "net:denied-name", "net:by-address", "net:rebind", "net:udp", "net:icmp"}

func TestDrillAllowlist(t *testing.T) {
	w, l := labWorld(t)
	args := append([]string{"--network", "allowlist", "--allow", "allowed.test", "--allow", lab.LANName, "--allow", lab.MetadataName}, allowlistDrillArgs...)
	r := w.drill(l, args...)
	t.Logf("tier allowlist (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	if r.code != 0 {
		t.Errorf("exit %d", r.code)
	}
	for _, id := range append(allowlistRows, "net:lan-gateway", "net:lan-hosts", "net:host", "net:metadata", "net:abstract") {
		r.want(t, id, drill.Pass)
	}
	for _, x := range r.list {
		if x.Status != drill.Pass && x.Status != drill.Skip {
			t.Errorf("%s: %s %q", x.ID, x.Status, x.Observed)
		}
	}

	// Protection off, one at a time: the network group only, the rows judged.
	// The internet tier has no allowlist and lets UDP out: judged as allowlist, the name
	// not allowed, the host by address and UDP are breaches (its own filter still stops
	// the rebinding to the LAN and metadata).
	r = w.drill(l, append([]string{"--network", "internet", "--expect", "allowlist", "--group", "network"}, allowlistDrillArgs...)...)
	t.Logf("tier internet judged as allowlist (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	for _, id := range []string{"net:denied-name", "net:by-address", "net:udp"} {
		r.want(t, id, drill.Breach)
	}
	r.want(t, "net:internet", drill.Pass)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	// Tier full has no rebinding check: an allowed name resolving to the LAN host or the
	// metadata address is reached.
	r = w.drill(l, append([]string{"--network", "full", "--expect", "allowlist", "--group", "network"}, allowlistDrillArgs...)...)
	t.Logf("tier full judged as allowlist (exit %d):\n%s", r.code, r.table())
	for _, id := range []string{"net:rebind", "net:denied-name", "net:by-address", "net:udp", "net:lan-hosts", "net:metadata"} {
		r.want(t, id, drill.Breach)
	}

	// ICMP: no sandbox at all (root in the lab's host namespace, raw sockets allowed).
	plan, err := drill.BuildPlan(drill.Input{Home: w.home, Workdir: w.proj, UID: w.uid, Tier: "allowlist",
		Environ: w.env, InternetURL: "http://denied.test/", AllowedURL: "http://allowed.test/",
		UDPTarget: lab.Internet.String() + ":7", Facts: drill.Facts{InternetAddr: lab.Internet}, Nonce: "unsandboxed"})
	if err != nil {
		t.Fatal(err)
	}
	var only drill.Plan
	only.TimeoutMs, only.Proxied = plan.TimeoutMs, plan.Proxied
	for _, pr := range plan.Probes {
		if pr.ID == "net:icmp" || pr.ID == "net:udp" || pr.ID == "net:by-address" {
			only.Probes = append(only.Probes, pr)
		}
	}
	in, _ := json.Marshal(only)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := l.Command(ctx, lab.RoleHost, w.box, drill.ProbeSubcommand)
	c.Stdin = strings.NewReader(string(in))
	out, err := c.Output()
	var obs []drill.Observation
	if err != nil || json.Unmarshal(out, &obs) != nil {
		t.Fatalf("runner as root: %v: %s", err, out)
	}
	res := drill.Judge(only, drill.Settle(only, obs))
	for _, x := range res {
		t.Logf("unsandboxed: %s %s %q", x.ID, x.Status, x.Observed)
		if x.Status != drill.Breach {
			t.Errorf("unsandboxed %s: %s, want BREACH", x.ID, x.Status)
		}
	}
}
