package drill

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/policy"
)

const planted = "ghp_PLANTEDtoken0123456789abcdefghijklmnop"

func input() Input {
	home := "/home/op"
	return Input{
		Home: home, Workdir: "/home/op/src/proj", UID: 1000, Tier: TierNone,
		Environ: []string{"HOME=/home/op", "TERM=xterm", "GITHUB_TOKEN=" + planted, "AWS_SECRET_ACCESS_KEY=PLANTEDsecretvalue",
			"SSH_AUTH_SOCK=/run/user/1000/ssh.sock", "GIT_AUTHOR_NAME=someone"},
		Entered: []string{"TERM"},
		Facts: Facts{
			Exists:   map[string]bool{home + "/.ssh": true, "/run/user/1000": true, home + "/.config/sops/age": true},
			Abstract: []string{"boxlab-host-secret"},
			Gateways: []netip.Addr{netip.MustParseAddr("192.168.77.1")},
			Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.168.77.2"),
				netip.MustParseAddr("fe80::1"), netip.MustParseAddr("198.51.100.2")},
			Listening: []int{8080}, Setuid: "/usr/bin/su", OuterCmdline: "box drill",
		},
		Nonce: "n0",
	}
}

func probe(t *testing.T, p Plan, id string) Probe {
	t.Helper()
	for _, pr := range p.Probes {
		if pr.ID == id {
			return pr
		}
	}
	t.Fatalf("no probe %s in %v", id, ids(p))
	return Probe{}
}

func ids(p Plan) []string {
	var out []string
	for _, pr := range p.Probes {
		out = append(out, pr.ID)
	}
	return out
}

func TestBuildPlanContracts(t *testing.T) {
	local := []string{"net:lan-gateway", "net:lan-hosts", "net:host", "net:sandbox-gateway", "net:special-ranges", "net:metadata", "net:abstract"}
	for _, c := range []struct {
		tier, expect policy.Tier
		internet     Want
		local        Want
	}{
		{TierNone, "", Blocked, Blocked},
		{TierInternet, "", Open, Blocked},
		{TierFull, "", Open, Allowed},
		{TierFull, TierInternet, Open, Blocked},
		{TierFull, TierNone, Blocked, Blocked},
		{TierInternet, TierNone, Blocked, Blocked},
	} {
		in := input()
		in.Tier, in.Expect = c.tier, c.expect
		p, err := BuildPlan(in)
		if err != nil {
			t.Fatal(err)
		}
		if w := probe(t, p, "net:internet").Want; w != c.internet {
			t.Errorf("%s/%s internet: %s, want %s", c.tier, c.expect, w, c.internet)
		}
		for _, id := range local {
			if w := probe(t, p, id).Want; w != c.local {
				t.Errorf("%s/%s %s: %s, want %s", c.tier, c.expect, id, w, c.local)
			}
		}
		judged := c.expect != "" && c.expect != c.tier
		if got := strings.Contains(probe(t, p, "net:host").Name, "judged as"); got != judged {
			t.Errorf("%s/%s: name %q", c.tier, c.expect, probe(t, p, "net:host").Name)
		}
	}
	for _, bad := range []Input{{Tier: "lan"}, {Tier: TierNone, Expect: "lan"}} {
		if _, err := BuildPlan(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestBuildPlanTargets(t *testing.T) {
	p, err := BuildPlan(input())
	if err != nil {
		t.Fatal(err)
	}
	if pr := probe(t, p, "secret:ssh"); pr.HostAbsent || pr.Want != Blocked || pr.Targets[0] != "/home/op/.ssh" {
		t.Errorf("ssh: %+v", pr)
	}
	if pr := probe(t, p, "secret:aws"); !pr.HostAbsent {
		t.Errorf("aws absent on host, not marked: %+v", pr)
	}
	if pr := probe(t, p, "secret:age"); pr.HostAbsent {
		t.Errorf("age present (sops) but marked absent")
	}
	if pr := probe(t, p, "secret:tailscale"); !slices.Contains(pr.Targets, "/var/lib/tailscale") {
		t.Errorf("tailscale: %v", pr.Targets)
	}
	if pr := probe(t, p, "socket:ssh-agent"); pr.Targets[0] != "/run/user/1000/ssh.sock" || !pr.HostAbsent || pr.Skip != "" {
		t.Errorf("ssh-agent: %+v", pr)
	}
	if pr := probe(t, p, "socket:run-user"); pr.HostAbsent {
		t.Errorf("run-user: %+v", pr)
	}
	if pr := probe(t, p, "socket:gpg-agent"); !slices.Contains(pr.Targets, "/home/op/.gnupg/S.gpg-agent") || !slices.Contains(pr.Targets, "/run/user/1000/gnupg/S.gpg-agent.ssh") {
		t.Errorf("gpg: %v", pr.Targets)
	}
	// Host addresses: no loopback, no link-local v6; ports: the listening one and the usual.
	host := probe(t, p, "net:host")
	for _, want := range []string{"192.168.77.2:8080", "198.51.100.2:8080", "198.51.100.2:22"} {
		if !slices.Contains(host.Targets, want) {
			t.Errorf("host targets %v lack %s", host.Targets, want)
		}
	}
	for _, tg := range host.Targets {
		if strings.HasPrefix(tg, "127.") || strings.Contains(tg, "fe80") {
			t.Errorf("host target %s", tg)
		}
	}
	if pr := probe(t, p, "net:lan-hosts"); pr.Skip == "" {
		t.Errorf("no neighbours, no --lan: want a skip, got %+v", pr)
	}
	if pr := probe(t, p, "net:metadata"); pr.Targets[0] != "169.254.169.254:80" {
		t.Errorf("metadata: %v", pr.Targets)
	}
	if pr := probe(t, p, "priv:setuid"); pr.Targets[0] != "/usr/bin/su" || pr.Skip != "" {
		t.Errorf("setuid: %+v", pr)
	}
	if pr := probe(t, p, "write:workdir"); pr.Want != Open || pr.Targets[0] != "/home/op/src/proj/.box-drill-n0" {
		t.Errorf("workdir: %+v", pr)
	}
	if pr := probe(t, p, "write:~/"); !pr.Scratch || pr.Targets[0] != "/home/op/.box-drill-n0" {
		t.Errorf("home write: %+v", pr)
	}
	if pr := probe(t, p, "write:/etc"); pr.Scratch || pr.Want != Blocked {
		t.Errorf("/etc write: %+v", pr)
	}
	if p.OuterCmdline != "box drill" || p.MaxProcs != 2 {
		t.Errorf("plan: %+v", p)
	}

	in := input()
	in.HostPort, in.LANTargets = 9999, []string{"192.168.77.10:80"}
	in.Facts = Facts{}
	p, _ = BuildPlan(in)
	if pr := probe(t, p, "net:lan-hosts"); pr.Skip != "" || !slices.Equal(pr.Targets, []string{"192.168.77.10:80"}) {
		t.Errorf("--lan: %+v", pr)
	}
	// A network the host routes to (a VPN's prefix): its first address is a LAN target.
	in.Facts = Facts{Routed: routedTargets([]netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("203.0.113.7/32")})}
	p, _ = BuildPlan(in)
	if pr := probe(t, p, "net:lan-hosts"); !slices.Contains(pr.Targets, "192.0.2.1:80") || !slices.Contains(pr.Targets, "203.0.113.7:80") {
		t.Errorf("routed networks: %+v", pr.Targets)
	}
	in.Facts = Facts{}
	p, _ = BuildPlan(in)
	for _, id := range []string{"net:lan-gateway", "net:host", "net:abstract", "priv:setuid"} {
		if probe(t, p, id).Skip == "" {
			t.Errorf("%s: no facts, want a skip", id)
		}
	}
	if pr := probe(t, p, "net:internet"); pr.Targets[0] != DefaultInternetURL {
		t.Errorf("default URL: %v", pr.Targets)
	}
}

func TestBuildPlanEnv(t *testing.T) {
	in := input()
	in.Entered = append(in.Entered, "GITHUB_TOKEN")
	in.AuthPassthrough = true
	p, err := BuildPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if pr := probe(t, p, "env:GITHUB_TOKEN"); pr.Want != Allowed {
		t.Errorf("allowlisted token: %+v", pr)
	}
	if pr := probe(t, p, "env:AWS_SECRET_ACCESS_KEY"); pr.Want != Blocked {
		t.Errorf("aws env: %+v", pr)
	}
	for _, id := range ids(p) {
		if id == "env:HOME" || id == "env:TERM" || id == "env:GIT_AUTHOR_NAME" {
			t.Errorf("%s probed as a secret", id)
		}
	}
	if pr := probe(t, p, "env:unlisted"); !slices.Equal(pr.Targets, []string{"GITHUB_TOKEN", "TERM"}) {
		t.Errorf("scan allowlist: %v", pr.Targets)
	}
	if pr := probe(t, p, "secret:claude-credentials"); pr.Want != Allowed {
		t.Errorf("auth passthrough: %+v", pr)
	}
	// The plan carries names, never values.
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), "PLANTED") {
		t.Errorf("a secret value is in the plan: %s", b)
	}

	in = input()
	in.Environ = []string{"TERM=xterm"}
	p, _ = BuildPlan(in)
	if pr := probe(t, p, "env:host"); pr.Skip == "" {
		t.Errorf("no secret env: %+v", pr)
	}
	if pr := probe(t, p, "socket:ssh-agent"); pr.Skip == "" {
		t.Errorf("no SSH_AUTH_SOCK: %+v", pr)
	}
}

func TestHostParsers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	unix := write("unix", `Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 23 @boxlab-host-secret
0000000000000000: 00000002 00000000 00010000 0001 01 24 /run/x.sock
0000000000000000: 00000003 00000000 00000000 0001 03 25 @connected-client
0000000000000000: 00000002 00000000 00010000 0005 01 26 @packet
0000000000000000: 00000002 00000000 00000000 0002 01 27 @dgram
0000000000000000: 00000002 00000000 00010000 0001 01 28 @boxlab-host-secret
`)
	if got := abstractSockets(unix); !slices.Equal(got, []string{"boxlab-host-secret", "seqpacket:packet"}) {
		t.Errorf("abstract: %q", got)
	}
	route := write("route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
		"eth0\t00000000\t014DA8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"+
		"eth0\t004DA8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
	if got := gateways(route); len(got) != 1 || got[0] != netip.MustParseAddr("192.168.77.1") {
		t.Errorf("gateways: %v", got)
	}
	arp := write("arp", "IP address       HW type     Flags       HW address            Mask     Device\n"+
		"192.168.77.10    0x1         0x2         aa:bb:cc:dd:ee:ff     *        eth0\n"+
		"192.168.77.11    0x1         0x0         00:00:00:00:00:00     *        eth0\n")
	if got := neighbors(arp); len(got) != 1 || got[0] != netip.MustParseAddr("192.168.77.10") {
		t.Errorf("neighbors: %v", got)
	}
	tcp := write("tcp", "  sl  local_address rem_address   st\n"+
		"   0: 00000000:0016 00000000:0000 0A\n"+ // 0.0.0.0:22
		"   1: 0100007F:0CEA 00000000:0000 0A\n"+ // 127.0.0.1:3306, loopback only
		"   2: 024DA8C0:1F90 00000000:0000 0A\n"+ // 192.168.77.2:8080
		"   3: 024DA8C0:C350 0A4DA8C0:0050 01\n") // established
	tcp6 := write("tcp6", "  sl  local_address rem_address   st\n"+
		"   0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A\n") // [::]:8081
	if got := listening([]netip.Addr{netip.MustParseAddr("192.168.77.2")}, tcp, tcp6); !slices.Equal(got, []int{22, 8080, 8081}) {
		t.Errorf("listening: %v", got)
	}
}
