package host_test

// A box's root claiming a sibling's IPv4 address to the host (ARP): the host's
// neighbour entry for the sibling then names the attacker's MAC, and what the host
// routes to the sibling (the replies of its internet connections, its DNS answers)
// goes to the attacker instead. Port isolation and the bridge-family drop do not see it:
// the frame goes from a box to the bridge itself, not to another port. What stops it is
// the placement profile's security.ipv4_filtering (Incus's per-NIC bridge filter: ARP
// and IPv4 only from the address Incus gave the NIC).

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestARPSpoofLive(t *testing.T) {
	testenv.RequireRoot(t)
	h := startHostLab(t)
	h.setup(t)
	c := h.incus.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mk := func(name string) string {
		if err := c.Create(ctx, incus.InstancesPost{Name: name, Type: incus.TypeContainer,
			Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Profiles: []string{host.ProfileName}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, name); err != nil {
			t.Fatal(err)
		}
		ip, err := c.WaitIPv4(ctx, name, "eth0")
		if err != nil {
			t.Fatal(err)
		}
		return ip
	}
	victim := mk("arp-victim")
	mk("arp-attacker")
	sh := func(name, script string) (int, string) {
		var out bytes.Buffer
		code, err := c.Exec(ctx, name, incus.Exec{Command: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}
	internet := "203.0.113.10"
	if code, out := sh("arp-victim", "ping -c 1 -W 3 "+internet); code != 0 {
		t.Fatalf("baseline: the victim does not reach the internet: %s", out)
	}
	_, mac := sh("arp-attacker", "cat /sys/class/net/eth0/address")
	mac = strings.TrimSpace(mac)
	n, err := c.Network(ctx, host.BridgeName)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := host.ParseGateway(n.Config["ipv4.address"])
	if err != nil {
		t.Fatal(err)
	}
	// What a root in a box does: take the sibling's address and ask the gateway from it,
	// so the host's ARP code learns "victim is at the attacker's MAC".
	sh("arp-attacker", "ip addr add "+victim+"/32 dev eth0; for i in 1 2 3; do ip neigh flush dev eth0; ping -c 1 -W 1 -I "+victim+" "+gw.Addr().String()+"; sleep 1.2; done")
	out, err := h.net.Command(ctx, lab.RoleHost, "ip", "neigh", "show", victim, "dev", host.BridgeName).CombinedOutput()
	if err != nil {
		t.Fatalf("ip neigh: %v: %s", err, out)
	}
	poisoned := strings.Contains(strings.ToLower(string(out)), mac)
	code, pout := sh("arp-victim", "ping -c 2 -W 3 "+internet)
	if poisoned {
		t.Errorf("the host's neighbour entry of box arp-victim (%s) names box arp-attacker's MAC %s: %s", victim, mac, out)
	}
	if code != 0 {
		t.Errorf("after the attacker's claim the victim no longer reaches the internet (its replies go elsewhere): %s", pout)
	}
}

// TestFilterUpgradeLive: a box running before setup-host added MAC and IPv4 filtering
// to the placement profile (a host upgraded under running boxes) keeps its address and
// the internet once setup-host has changed the profile.
func TestFilterUpgradeLive(t *testing.T) {
	testenv.RequireRoot(t)
	h := startHostLab(t)
	h.setup(t)
	c := h.incus.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := c.Profile(ctx, host.ProfileName)
	if err != nil {
		t.Fatal(err)
	}
	delete(p.Devices["eth0"], "security.mac_filtering")
	delete(p.Devices["eth0"], "security.ipv4_filtering")
	must(t, c.ReplaceProfile(ctx, *p))
	if err := c.Create(ctx, incus.InstancesPost{Name: "up-box", Type: incus.TypeContainer,
		Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
		Profiles: []string{host.ProfileName}}); err != nil {
		t.Fatal(err)
	}
	must(t, c.Start(ctx, "up-box"))
	before, err := c.WaitIPv4(ctx, "up-box", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	ping := func() (int, string) {
		var out bytes.Buffer
		code, err := c.Exec(ctx, "up-box", incus.Exec{Command: []string{"ping", "-c", "1", "-W", "3", "203.0.113.10"}, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}
	if code, out := ping(); code != 0 {
		t.Fatalf("before: no internet: %s", out)
	}
	if out := h.setup(t); !strings.Contains(out, "changed") {
		t.Fatalf("setup-host did not change the profile:\n%s", out)
	}
	// The box renews its lease on its own schedule; what matters is that it is not cut
	// off meanwhile: the filter must admit the address it already has.
	for i := range 3 {
		if code, out := ping(); code != 0 {
			t.Errorf("try %d after setup-host: the running box lost the internet: %s", i, out)
		}
	}
	var out bytes.Buffer
	_, _ = c.Exec(ctx, "up-box", incus.Exec{Command: []string{"networkctl", "renew", "eth0"}, Stdout: &out, Stderr: &out})
	after, err := c.WaitIPv4(ctx, "up-box", "eth0")
	t.Logf("address before %s, after setup-host and a renew %s (%v) %s", before, after, err, out.String())
	if code, out := ping(); code != 0 {
		t.Errorf("after a DHCP renew: no internet: %s", out)
	}
}
