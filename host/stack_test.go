package host

import (
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

var stackInput = Stack{
	Gateway:   netip.MustParsePrefix("10.88.0.1/24"),
	Resolvers: []netip.Addr{netip.MustParseAddr("203.0.113.10")},
	HostAddrs: []netip.Addr{netip.MustParseAddr("192.168.77.2"), netip.MustParseAddr("198.51.100.2"),
		netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("2001:db8::2"), netip.MustParseAddr("10.88.0.1")},
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
