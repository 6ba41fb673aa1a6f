package inet

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// The host's addresses as a laptop on a LAN with a public address would have them:
// loopback, RFC 1918 and IPv6 ones are already covered, public ones become rules, sorted
// and deduplicated.
var laptop = []netip.Addr{
	netip.MustParseAddr("198.51.100.2"),
	netip.MustParseAddr("127.0.0.1"),
	netip.MustParseAddr("192.168.77.2"),
	netip.MustParseAddr("::1"),
	netip.MustParseAddr("fe80::1"),
	netip.MustParseAddr("2001:db8::2"),
	netip.MustParseAddr("::ffff:203.0.113.7"),
	netip.MustParseAddr("198.51.100.2"),
}

// The laptop's subnets: its public address's /24 (a LAN in public space) becomes a rule
// and covers that address; the private and loopback ones are already blocked; a
// subnet of 10.0.0.0/8 is too.
var laptopNets = []netip.Prefix{
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("192.168.77.0/24"),
	netip.MustParsePrefix("10.1.0.0/16"),
	netip.MustParsePrefix("203.0.113.7/32"),
}

func TestPlanGolden(t *testing.T) {
	for _, h := range []Helper{Pasta, Slirp4netns} {
		t.Run(string(h), func(t *testing.T) {
			golden(t, "plan-"+string(h)+".nft", Plan(Options{Helper: h, HostAddrs: laptop, HostNets: laptopNets}).String())
		})
	}
}

// A LAN numbered in public space is the host's subnet, not a private range: the plan
// rejects every address of it, not only the host's own (review finding, session 10).
func TestPlanRejectsHostSubnets(t *testing.T) {
	rs := Plan(Options{Helper: Pasta, HostAddrs: laptop, HostNets: laptopNets})
	neighbour := netip.MustParseAddr("198.51.100.10")
	if !slices.ContainsFunc(rs.Rules, func(r Rule) bool { return r.Verdict == Reject && r.Daddr.Contains(neighbour) }) {
		t.Errorf("neighbour %v on the host's 198.51.100.0/24 not rejected:\n%s", neighbour, rs)
	}
	for _, r := range rs.Rules {
		if r.Daddr == netip.MustParsePrefix("198.51.100.2/32") || r.Daddr == netip.MustParsePrefix("10.1.0.0/16") {
			t.Errorf("redundant rule %s (inside a subnet or a blocked range)", r)
		}
	}
	if got := hostBlocks(Blocked, nil, []netip.Prefix{netip.MustParsePrefix("198.51.100.77/24")}); len(got) != 1 || got[0] != netip.MustParsePrefix("198.51.100.0/24") {
		t.Errorf("an unmasked subnet: %v, want 198.51.100.0/24", got)
	}
}

// The plan never lets the resolver exception widen beyond DNS, and every blocked range
// comes after it, so nothing but port 53 reaches a private address.
func TestPlanOrder(t *testing.T) {
	rs := Plan(Options{Helper: Pasta, HostAddrs: laptop})
	if !rs.Rules[0].OifLo || !rs.Rules[1].IPv6 {
		t.Fatalf("first rules must be lo accept and IPv6 reject: %v", rs.Rules[:2])
	}
	for i, r := range rs.Rules {
		if r.Verdict == Accept && !r.OifLo && (r.Dport != 53 || r.Daddr.Bits() != 32) {
			t.Errorf("rule %d accepts more than DNS to one address: %s", i, r)
		}
	}
	for _, p := range Blocked {
		if !slices.ContainsFunc(rs.Rules, func(r Rule) bool { return r.Daddr == p && r.Verdict == Reject }) {
			t.Errorf("%v not rejected", p)
		}
	}
}

func TestHelperArgv(t *testing.T) {
	got := strings.Join(HelperArgv(Pasta), " ") + "\n" + strings.Join(HelperArgv(Slirp4netns), " ") + "\n" +
		strings.Join(FilterArgv([]string{"/proc/self/fd/5", FilterSubcommand}, 4026532467, 10*time.Second), " ") + "\n"
	golden(t, "argv.txt", got)
	for _, must := range []string{"--no-map-gw", "--ipv4-only", "--tcp-ns none", "--udp-ns none", "--tcp-ports none", "--udp-ports none", "--dns-forward 169.254.1.1"} {
		if !strings.Contains(strings.Join(HelperArgv(Pasta), " "), must) {
			t.Errorf("pasta argv lacks %s", must)
		}
	}
	if !slices.Contains(HelperArgv(Slirp4netns), "--disable-host-loopback") || slices.Contains(HelperArgv(Slirp4netns), "--enable-ipv6") {
		t.Errorf("slirp4netns argv: %v", HelperArgv(Slirp4netns))
	}
}

func TestResolvConf(t *testing.T) {
	if got := ResolvConf(Pasta); got != "nameserver 169.254.1.1\n" {
		t.Errorf("pasta: %q", got)
	}
	if got := ResolvConf(Slirp4netns); got != "nameserver 10.0.2.3\n" {
		t.Errorf("slirp4netns: %q", got)
	}
	if got := ResolvConf(Auto); got != "" {
		t.Errorf("auto: %q", got)
	}
	if _, err := (Options{Helper: "vde"}).Resolve(); err == nil {
		t.Error("unknown helper accepted")
	}
}

func TestFilterMainRefusesWrongNetns(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-netns-ino=1"},
		{"-netns-ino=1", "-not-netns-ino=2"},
	} {
		if err := filterMain(args, strings.NewReader("{}")); err == nil || !strings.Contains(err.Error(), "netns") {
			t.Errorf("filterMain(%v) = %v, want a refusal", args, err)
		}
	}
}

// Neither helper installed: the error says what is missing and leaves the way forward to
// box's hint line, which it repeated in other words (field review, session 20:
// "... is installed (hint: install passt or slirp4netns)" then "box: hint: install passt
// (pasta) or slirp4netns, then run 'box --check'").
func TestResolveNoHelperSaidOnce(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Options{Helper: Auto}.Resolve()
	if err == nil || strings.Contains(err.Error(), "hint") || !strings.Contains(err.Error(), "neither pasta nor slirp4netns is installed") {
		t.Errorf("Resolve without helpers: %v", err)
	}
}
