package drill_test

// A LAN numbered in public space: the lab's LAN host also answers on 198.51.100.10, on
// the host's own 198.51.100.0/24, in no private range. The internet tier must not reach
// it by address, nor the allowlist tier's proxy through a name that resolves to it; with
// the host's subnets not rejected (test build, BOX_UNSAFE_OFF=host-lan) both are BREACH
// (review finding, session 10: they were, before the tiers rejected the host's subnets).

import (
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

func TestDrillHostSubnet(t *testing.T) {
	w, l := labWorld(t)
	inet := []string{"--network", "internet", "--group", "network",
		"--internet-url", "http://" + lab.InternetName + "/", "--lan", lab.LANHostPublic.String() + ":80"}
	allow := []string{"--network", "allowlist", "--group", "network", "--allow", "allowed.test", "--allow", lab.LANPublicName,
		"--internet-url", "http://denied.test/", "--allowed-url", "http://allowed.test/",
		"--rebind-url", "http://" + lab.LANPublicName + "/", "--lan", lab.LANHostPublic.String() + ":80"}

	drillHostNetwork(t, w, l, bwrap.ProtHostLAN, inet, allow)
}

// drillHostNetwork drills a network of the host's that neither tier may reach: the
// internet tier's net:lan-hosts and the allowlist tier's net:rebind PASS, and with
// protection prot off (test build) both are BREACH.
func drillHostNetwork(t *testing.T, w *world, l *lab.Lab, prot string, inet, allow []string) {
	t.Helper()
	r := w.drill(l, inet...)
	t.Logf("tier internet (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:lan-hosts", drill.Pass)
	r.want(t, "net:internet", drill.Pass)
	r = w.drill(l, allow...)
	t.Logf("tier allowlist (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:rebind", drill.Pass)
	r.want(t, "net:lan-hosts", drill.Pass)
	r.want(t, "net:internet", drill.Pass)

	off := *w
	off.withProtectionOff(t, prot)
	r = off.drill(l, inet...)
	t.Logf("tier internet, %s off (exit %d):\n%s%s", prot, r.code, r.table(), r.stderr)
	r.want(t, "net:lan-hosts", drill.Breach)
	r.want(t, "net:internet", drill.Pass)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	r = off.drill(l, allow...)
	t.Logf("tier allowlist, %s off (exit %d):\n%s%s", prot, r.code, r.table(), r.stderr)
	r.want(t, "net:rebind", drill.Breach)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
}
