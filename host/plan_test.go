package host

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.nft goldens from Plan")

func TestSubnetOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"10.88.0.1/24", "10.88.0.0/24"},
		{"10.88.0.254/24", "10.88.0.0/24"},
		{"172.31.5.9/20", "172.31.0.0/20"},
		{" 192.168.7.1/16 ", "192.168.0.0/16"},
	} {
		got, err := SubnetOf(tc.in)
		if err != nil {
			t.Errorf("SubnetOf(%q): %v", tc.in, err)
			continue
		}
		if got.String() != tc.want {
			t.Errorf("SubnetOf(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "10.88.0.1", "10.88.0.0/24", "fd00::1/64", "10.88.0.1/31", "10.88.0.1/4", "nonsense"} {
		if got, err := SubnetOf(bad); err == nil {
			t.Errorf("SubnetOf(%q) = %s, want an error", bad, got)
		}
	}
}

func testInputs(meta bool) Inputs {
	return Inputs{Bridge: "boxnet", Gateway: netip.MustParsePrefix("10.88.0.1/24"), BridgeMeta: meta}
}

// goldenPath names the golden for a variant: one file proves the rendering here and the
// kernel's reading of the same rules in the kernel test.
func goldenPath(meta bool) string {
	if meta {
		return filepath.Join("testdata", "bridgemeta.nft")
	}
	return filepath.Join("testdata", "fallback.nft")
}

func TestPlanGolden(t *testing.T) {
	for _, meta := range []bool{false, true} {
		rs, err := Plan(testInputs(meta))
		if err != nil {
			t.Fatal(err)
		}
		got := rs.String()
		path := goldenPath(meta)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./host -run TestPlanGolden -update)", err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s (-golden +plan):\n%s", path, diff)
		}
	}
}

// The subnet in the rules follows the gateway: nothing in the plan is a literal.
func TestPlanFollowsGateway(t *testing.T) {
	in := testInputs(false)
	in.Bridge = "br-other"
	in.Gateway = netip.MustParsePrefix("172.30.16.1/20")
	in.PortPatterns = []string{"vbox*"}
	rs, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	s := rs.String()
	for _, want := range []string{
		`ip saddr 172.30.16.0/20 ip daddr 172.30.16.1 udp dport 53 accept`,
		`iifname "br-other" drop`,
		`oifname "br-other" drop`,
		`iifname "vbox*" oifname "vbox*" drop`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("plan lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"10.88", "boxnet", "veth", "tap"} {
		if strings.Contains(s, not) {
			t.Errorf("plan for other inputs mentions %q:\n%s", not, s)
		}
	}
}

func TestPlanRejects(t *testing.T) {
	good := testInputs(false)
	for name, mod := range map[string]func(*Inputs){
		"no bridge":        func(in *Inputs) { in.Bridge = "" },
		"long bridge":      func(in *Inputs) { in.Bridge = "a-very-long-bridge-name" },
		"quote in bridge":  func(in *Inputs) { in.Bridge = `box"net` },
		"no gateway":       func(in *Inputs) { in.Gateway = netip.Prefix{} },
		"subnet as gw":     func(in *Inputs) { in.Gateway = netip.MustParsePrefix("10.88.0.0/24") },
		"ipv6 gateway":     func(in *Inputs) { in.Gateway = netip.MustParsePrefix("fd00::1/64") },
		"match-all ports":  func(in *Inputs) { in.PortPatterns = []string{"veth*", "*"} },
		"wildcard in name": func(in *Inputs) { in.PortPatterns = []string{"ve*th"} },
	} {
		in := good
		mod(&in)
		if _, err := Plan(in); err == nil {
			t.Errorf("%s: Plan accepted %+v", name, in)
		}
	}
}

func TestWithout(t *testing.T) {
	rs, _ := Plan(testInputs(false))
	names := func(rs Ruleset) map[string]int {
		n := map[string]int{}
		for _, tb := range rs.Tables {
			for _, c := range tb.Chains {
				for _, r := range c.Rules {
					n[r.Name]++
				}
			}
		}
		return n
	}
	before := names(rs)
	after := names(rs.Without("box-to-box", "host-to-box"))
	if before["box-to-box"] != 4 || before["host-to-box"] != 1 {
		t.Fatalf("plan rule names: %v", before)
	}
	if after["box-to-box"] != 0 || after["host-to-box"] != 0 {
		t.Errorf("Without kept removed rules: %v", after)
	}
	if after["forward-to-box"] != 1 || after["box-to-host"] != 1 {
		t.Errorf("Without removed other rules: %v", after)
	}
	if names(rs)["box-to-box"] != 4 {
		t.Error("Without modified its receiver")
	}
}

func TestOverreach(t *testing.T) {
	ports := map[string][]string{
		"boxnet":  {"veth1a2b3c4d", "tap99aa88bb"},
		"docker0": {"veth7f3a1c2", "vethe09d1b3", "eth9"},
		"lxdbr0":  {"veth00000001"}, // alone: no sibling to lose
		"br-lan":  {"eth1", "eth2"},
	}
	got := Overreach(testInputs(false), ports)
	want := []string{"docker0/veth7f3a1c2", "docker0/vethe09d1b3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Overreach (-want +got):\n%s", diff)
	}
	if got := Overreach(testInputs(true), ports); got != nil {
		t.Errorf("Overreach with bridge meta = %v, want none", got)
	}
}
