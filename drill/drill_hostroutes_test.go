package drill_test

// A VPN of the host's to a prefix in public address space: the lab's host routes
// 192.0.2.0/24 through a link of its own (vpn0) to the LAN host, which answers on
// 192.0.2.1 (lab.AddVPN), as a split-tunnel WireGuard to a company network does. The
// prefix is in no blocked range and is no subnet of the host's interfaces. The internet
// tier must not reach it by address, nor the allowlist tier's proxy through an allowed
// name that resolves to it (rebinding); with the host's routes not rejected (test build,
// BOX_UNSAFE_OFF=host-routes) both are BREACH (review finding, session 13: they were,
// while the docs told such hosts to use tier allowlist).

import (
	"context"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill/lab"
)

func TestDrillHostRoutes(t *testing.T) {
	w, l := labWorld(t)
	if err := l.AddVPN(context.Background()); err != nil {
		t.Fatal(err)
	}
	// No --lan: the drill finds the routed prefix itself (Facts.Routed) and probes its
	// first address in net:lan-hosts.
	inet := []string{"--network", "internet", "--group", "network",
		"--internet-url", "http://" + lab.InternetName + "/"}
	allow := []string{"--network", "allowlist", "--group", "network", "--allow", "allowed.test", "--allow", lab.VPNName,
		"--internet-url", "http://denied.test/", "--allowed-url", "http://allowed.test/",
		"--rebind-url", "http://" + lab.VPNName + "/"}

	drillHostNetwork(t, w, l, bwrap.ProtHostRoutes, inet, allow)
}
