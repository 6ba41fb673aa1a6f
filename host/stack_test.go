package host

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

var stackInput = Stack{
	Gateway:   netip.MustParsePrefix("10.88.0.1/24"),
	Resolvers: []netip.Addr{netip.MustParseAddr("203.0.113.10")},
	HostAddrs: []netip.Addr{netip.MustParseAddr("192.168.77.2"), netip.MustParseAddr("198.51.100.2"),
		netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("2001:db8::2"), netip.MustParseAddr("10.88.0.1"),
		netip.MustParseAddr("203.0.113.99")}, // a listen address with no subnet known (a remote's)
	HostNets: []HostNet{
		{netip.MustParsePrefix("192.168.77.2/24"), "eth0"}, {netip.MustParsePrefix("198.51.100.2/24"), "eth0"},
		{netip.MustParsePrefix("127.0.0.1/8"), "lo"}, {netip.MustParsePrefix("2001:db8::2/64"), "eth0"},
		{netip.MustParsePrefix("10.88.0.1/24"), "boxnet"}, {netip.MustParsePrefix("198.51.100.7/24"), "eth1"},
	},
}

// dropped reports the descriptions of the ACL's egress drops covering a.
func dropped(acl incus.NetworkACL, a string) []string {
	var out []string
	for _, r := range acl.Egress {
		if p, err := netip.ParsePrefix(r.Destination); err == nil && r.Action == "drop" && p.Contains(netip.MustParseAddr(a)) {
			out = append(out, r.Description)
		}
	}
	return out
}

// TestPlanStackHostSubnets: a neighbour on the host's own public subnet (a LAN numbered
// in public space: campus, hosting provider) is dropped, not only the host's address;
// the internet, the gateway (sibling drop only, which Incus's chains let DHCP/DNS past)
// and the bridge's own subnet keep their rules.
func TestPlanStackHostSubnets(t *testing.T) {
	p, err := PlanStack(stackInput)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"198.51.100.10", "198.51.100.2", "198.51.100.254", "203.0.113.99"} {
		if len(dropped(p.ACL, a)) == 0 {
			t.Errorf("%s (the host's LAN or address) is not dropped: %+v", a, p.ACL.Egress)
		}
	}
	if d := dropped(p.ACL, "198.51.100.10"); len(d) != 1 || d[0] != RuleHostNet+"198.51.100.0/24" {
		t.Errorf("198.51.100.10 dropped by %q, want the one host-subnet rule", d)
	}
	for _, a := range []string{"203.0.113.10", "198.51.101.1", "1.1.1.1"} {
		if d := dropped(p.ACL, a); len(d) != 0 {
			t.Errorf("the internet's %s is dropped by %q", a, d)
		}
	}
	if d := dropped(p.ACL, "10.88.0.1"); len(d) != 2 || d[1] != RuleSibling {
		t.Errorf("the gateway is dropped by %q, want the private range and the sibling drop only", d)
	}

	// A /8 of public space is the shortest dropped; anything wider is refused by name.
	in := stackInput
	in.HostNets = append(slices.Clone(stackInput.HostNets), HostNet{netip.MustParsePrefix("44.1.2.3/8"), "ampr0"})
	if p, err := PlanStack(in); err != nil || len(dropped(p.ACL, "44.200.0.1")) != 1 {
		t.Errorf("a public /8: %v", err)
	}
	for _, wide := range []string{"198.51.100.2/7", "128.0.0.1/1", "0.0.0.1/0"} {
		in.HostNets = append(slices.Clone(stackInput.HostNets), HostNet{netip.MustParsePrefix(wide), "wan9"})
		_, err := PlanStack(in)
		if !errors.Is(err, ErrWideHostNet) || !strings.Contains(err.Error(), "wan9") {
			t.Errorf("host subnet %s: err %v, want ErrWideHostNet naming wan9", wide, err)
		}
	}
	// Wide but private (or loopback): in a dropped range already, nothing refused.
	in.HostNets = []HostNet{{netip.MustParsePrefix("10.1.2.3/8"), "eth2"}, {netip.MustParsePrefix("127.0.0.1/8"), "lo"}}
	if _, err := PlanStack(in); err != nil {
		t.Errorf("private /8: %v", err)
	}
	// The bridge's own interface is the sibling drop's, even when pinned public.
	in = stackInput
	in.Gateway = netip.MustParsePrefix("192.0.2.1/24")
	in.HostNets = []HostNet{{netip.MustParsePrefix("192.0.2.1/24"), BridgeName}}
	if p, err := PlanStack(in); err != nil || len(dropped(p.ACL, "192.0.2.1")) != 1 {
		t.Errorf("bridge pinned public: %v, drops %q", err, dropped(p.ACL, "192.0.2.1"))
	}
}

// TestPlanStackGolden: the bridge, ACL and profile as plain data, checked against
// testdata/stack.json (go test ./host -run PlanStack -update rewrites it).
func TestPlanStackGolden(t *testing.T) {
	p, err := PlanStack(stackInput)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.MarshalIndent(p, "", "  ")
	got = append(got, '\n')
	path := filepath.Join("testdata", "stack.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("PlanStack differs from %s (run with -update after checking):\n%s", path, got)
	}
}

func TestPlanStackInvariants(t *testing.T) {
	for _, gw := range []string{"10.88.0.1/24", "172.20.5.9/16", "192.168.200.1/28"} {
		in := stackInput
		in.Gateway = netip.MustParsePrefix(gw)
		p, err := PlanStack(in)
		if err != nil {
			t.Fatal(err)
		}
		if p.Network.Config["ipv6.address"] != "none" || p.Network.Config["dns.mode"] != "none" ||
			!strings.Contains(p.Network.Config["raw.dnsmasq"], "dhcp-ignore-names\n") {
			t.Errorf("%s: network %v", gw, p.Network.Config)
		}
		// The sibling drop is the masked gateway, whatever the subnet.
		want := netip.MustParsePrefix(gw).Masked().String()
		found := false
		for _, r := range p.ACL.Egress {
			if r.Description == RuleSibling && r.Destination == want && r.Action == "drop" {
				found = true
			}
			if r.Action != "drop" {
				t.Errorf("%s: a non-drop rule %+v", gw, r)
			}
		}
		if !found {
			t.Errorf("%s: no sibling drop for %s", gw, want)
		}
		if len(p.Profile.Devices) != 2 || len(p.Profile.Config) != 0 {
			t.Errorf("%s: profile carries more than the NIC and the root disk: %+v", gw, p.Profile)
		}
	}
	bad := stackInput
	bad.Gateway = netip.MustParsePrefix("10.88.0.0/24")
	if _, err := PlanStack(bad); err == nil {
		t.Error("a network address as gateway was accepted")
	}
	bad = stackInput
	bad.Resolvers = nil
	if _, err := PlanStack(bad); err == nil {
		t.Error("no resolver was accepted")
	}
}

func TestChooseSubnet(t *testing.T) {
	claims := []Claim{
		{netip.MustParsePrefix("10.88.0.0/16"), "route 10.88.0.0/16 dev wg0"},
		{netip.MustParsePrefix("10.89.0.1/32"), "the default gateway 10.89.0.1 (dev eth0)"},
		{netip.MustParsePrefix("192.168.1.0/24"), "interface eth0 (192.168.1.20/24)"},
	}
	for _, tc := range []struct {
		pinned, want, err string
	}{
		{"", "10.89.1.1/24", ""},
		{"10.99.0.0/24", "10.99.0.1/24", ""},
		{"10.99.0.7/24", "10.99.0.7/24", ""},
		{"192.168.1.0/25", "", "interface eth0"},
		{"10.89.0.0/24", "", "default gateway"},
		{"nonsense", "", "subnet"},
	} {
		got, err := ChooseSubnet(claims, tc.pinned)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("pinned %q: err %v, want %q", tc.pinned, err, tc.err)
			}
		case err != nil || got.String() != tc.want:
			t.Errorf("pinned %q: %v %v, want %s", tc.pinned, got, err, tc.want)
		}
	}
	if _, err := ChooseSubnet(claims, "10.88.3.0/24"); !errors.Is(err, ErrClaimed) {
		t.Errorf("claimed pinned subnet: %v", err)
	}
	if _, err := ChooseSubnet([]Claim{{netip.MustParsePrefix("10.0.0.0/8"), "route"}}, ""); err == nil {
		t.Error("all candidates claimed, yet a subnet was chosen")
	}
}

func TestReadRoutes(t *testing.T) {
	f := filepath.Join(t.TempDir(), "route")
	os.WriteFile(f, []byte("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
		"eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"+
		"eth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"), 0o644)
	rs, err := readRoutes(f)
	if err != nil || len(rs) != 2 {
		t.Fatal(rs, err)
	}
	if rs[0].dst.Bits() != 0 || rs[0].gw.String() != "192.168.0.1" || rs[1].dst.String() != "192.168.0.0/24" {
		t.Errorf("%+v", rs)
	}
}

func TestDiffs(t *testing.T) {
	p, _ := PlanStack(stackInput)
	acl := p.ACL
	acl.Egress = acl.Egress[1:]
	acl.Egress = append(acl.Egress, incus.ACLRule{Action: "allow", Destination: "10.0.0.5/32", State: "enabled"})
	d := ACLDiff(p.ACL, acl)
	if len(d) != 2 || !strings.Contains(d[0], "missing: drop destination=10.0.0.0/8") || !strings.Contains(d[1], "not planned: allow") {
		t.Errorf("ACLDiff: %q", d)
	}
	prof := p.Profile
	prof.Devices = map[string]map[string]string{"eth0": {"type": "nic", "network": "boxnet", "name": "eth0"}, "root": p.Profile.Devices["root"],
		"gpu": {"type": "gpu"}}
	prof.Config = map[string]string{"security.nesting": "true"}
	d = ProfileDiff(p.Profile, prof)
	if len(d) != 3 {
		t.Errorf("ProfileDiff: %q", d)
	}
	if d := ConfigDiff(p.Network.Config, map[string]string{"ipv6.address": "auto"}); len(d) != len(p.Network.Config) {
		t.Errorf("ConfigDiff: %q", d)
	}
}

// TestUnitFile: the boot unit's content (golden), quoting of odd binary paths, and
// EnsureUnit's created / already right / changed.
func TestUnitFile(t *testing.T) {
	got := UnitFile("/usr/local/bin/box", "boxnet", "10.88.0.1/24")
	path := filepath.Join("testdata", "box-firewall.service")
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil || got != string(want) {
		t.Errorf("unit differs from %s (%v):\n%s", path, err, got)
	}
	if u := UnitFile("/opt/my box/box", "boxnet", "10.88.0.1/24"); !strings.Contains(u, `ExecStart="/opt/my box/box" setup-host`) {
		t.Errorf("quoting: %s", u)
	}
	dir := t.TempDir()
	for i, want := range []Outcome{Created, Right, Changed} {
		gw := "10.88.0.1/24"
		if i == 2 {
			gw = "10.88.1.1/24"
		}
		st, err := EnsureUnit(dir, "/usr/local/bin/box", "boxnet", gw)
		if err != nil || st.Outcome != want {
			t.Errorf("run %d: %+v %v, want %s", i, st, err, want)
		}
	}
	if l, err := os.Readlink(UnitWants(dir)); err != nil || l != filepath.Join(dir, UnitName) {
		t.Errorf("not enabled: %q %v", l, err)
	}
}
