package host_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/testenv"
)

// objects are the API objects of the stack, for before/after comparisons.
type stackObjects struct {
	Network *incus.Network
	ACL     *incus.NetworkACL
	Profile *incus.Profile
	Tables  string
}

func (h *hostLab) objects(t *testing.T) stackObjects {
	t.Helper()
	ctx := context.Background()
	c := h.incus.Client
	n, err := c.Network(ctx, host.BridgeName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.NetworkACLByName(ctx, host.ACLName)
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Profile(ctx, host.ProfileName)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.net.Command(ctx, lab.RoleHost, "nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	return stackObjects{n, a, p, string(out)}
}

func rootRuleset(t *testing.T) string {
	out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v: %s", err, out)
	}
	return string(out)
}

// TestHostStack runs setup-host, doctor, the vm drill (and each protection removed),
// migrate-host and teardown-host for real, in one shared lab.
func TestHostStack(t *testing.T) {
	testenv.RequireRoot(t)
	rootBefore := rootRuleset(t)
	h := startHostLab(t)
	ctx := context.Background()
	c := h.incus.Client

	t.Run("setup-host creates the stack", func(t *testing.T) {
		out := h.setup(t)
		for _, obj := range []string{"network ACL box-isolate", "network boxnet", "profile box-net", "nftables bridge/inet box", "boot unit"} {
			if !strings.Contains(out, obj) || !containsLine(out, obj, string(host.Created)) {
				t.Errorf("setup-host did not report %q created:\n%s", obj, out)
			}
		}
		o := h.objects(t)
		cfg := o.Network.Config
		for k, v := range map[string]string{"ipv6.address": "none", "dns.mode": "none", "ipv4.nat": "true",
			"security.acls": host.ACLName, "security.acls.default.ingress.action": "drop"} {
			if cfg[k] != v {
				t.Errorf("network %s=%q, want %q", k, cfg[k], v)
			}
		}
		if !strings.Contains(cfg["raw.dnsmasq"], "dhcp-ignore-names") || !strings.Contains(cfg["raw.dnsmasq"], "server=203.0.113.10") {
			t.Errorf("raw.dnsmasq = %q", cfg["raw.dnsmasq"])
		}
		sn, err := host.SubnetOf(cfg["ipv4.address"])
		if err != nil {
			t.Fatal(err)
		}
		var sib bool
		for _, r := range o.ACL.Egress {
			if r.Destination == sn.String() && r.Action == "drop" {
				sib = true
			}
		}
		if !sib {
			t.Errorf("ACL has no sibling drop for %s: %+v", sn, o.ACL.Egress)
		}
		eth0 := o.Profile.Devices["eth0"]
		if eth0["security.port_isolation"] != "true" || eth0["security.mac_filtering"] != "true" || eth0["security.ipv4_filtering"] != "true" ||
			len(o.Profile.Devices) != 2 || len(o.Profile.Config) != 0 {
			t.Errorf("profile: %+v", o.Profile)
		}
	})

	t.Run("setup-host is idempotent", func(t *testing.T) {
		before := h.objects(t)
		out := h.setup(t)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.Contains(l, string(host.Right)) {
				t.Errorf("second run changed something: %s", l)
			}
		}
		after := h.objects(t)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("objects changed by a re-run:\nbefore %+v\nafter  %+v", before, after)
		}
	})

	t.Run("boot unit and the verb it runs", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(h.unitDir, host.UnitName))
		if err != nil {
			t.Fatal(err)
		}
		unit := string(b)
		gw := h.objects(t).Network.Config["ipv4.address"]
		for _, want := range []string{"Type=oneshot", "RemainAfterExit=yes", "WantedBy=multi-user.target",
			" setup-host --firewall-only --bridge boxnet --gateway " + gw + "\n", "Before=network-pre.target"} {
			if !strings.Contains(unit, want) {
				t.Errorf("unit lacks %q:\n%s", want, unit)
			}
		}
		if l, err := os.Readlink(host.UnitWants(h.unitDir)); err != nil || l != filepath.Join(h.unitDir, host.UnitName) {
			t.Errorf("unit not enabled: %q %v", l, err)
		}
		// What ExecStart runs, after a "reboot" wiped the tables (incusd not asked).
		var args []string
		for _, l := range strings.Split(unit, "\n") {
			if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
				args = strings.Fields(v)[1:]
			}
		}
		if err := host.Remove(h.conn); err != nil {
			t.Fatal(err)
		}
		if out := h.mustRun(t, args...); !strings.Contains(out, string(host.Created)) {
			t.Errorf("firewall-only did not re-create the tables: %s", out)
		}
		if out := h.mustRun(t, args...); !strings.Contains(out, string(host.Right)) {
			t.Errorf("firewall-only re-run: %s", out)
		}
	})

	t.Run("setup-host refuses a claimed subnet naming the claimant", func(t *testing.T) {
		_, errOut, code := h.run(t, append(labSetup, "--unit-dir", h.unitDir, "--subnet", "192.168.77.0/24")...)
		if code != 2 || !strings.Contains(errOut, "eth0") {
			t.Errorf("exit %d, stderr %s", code, errOut)
		}
	})

	t.Run("doctor passes", func(t *testing.T) {
		out := h.mustRun(t, "doctor", "--unit-dir", h.unitDir)
		if strings.Contains(out, "FAIL") {
			t.Errorf("doctor: %s", out)
		}
	})

	t.Run("drill", func(t *testing.T) {
		rs, code := h.drill(t)
		if code != 0 {
			t.Errorf("drill exit %d", code)
		}
		// Seed 001's isolation test, among the rows.
		for _, id := range []string{"sibling:icmp", "sibling:getent", "sibling:getent-incus", "net:internet-http",
			"net:internet-dns", "ipv6:bridge", "sibling:tcp", "sibling:gateway-dns", "sibling:ipv6-link-local",
			"host:gateway:8080", "host:public:198.51.100.2:8080", "lan:192.168.77.10:80", "lan:198.51.100.10:80", "lan:metadata",
			"host-to-box:tcp", "ipv6:box", "verbs:untagged", "verbs:terminal-strings", "door:loopback", "door:host-addresses", "sibling:arp-claim"} {
			r, ok := rs[id]
			if !ok {
				t.Errorf("no row %s", id)
			} else if r.Status != drill.Pass {
				t.Errorf("%s: %s (%s)", id, r.Status, r.Observed)
			}
		}
	})

	breakages := []struct {
		name    string
		brk     func(t *testing.T)
		check   string   // the doctor check that must fail
		rows    []string // drill rows that must not pass
		breachs []string // of those, rows that must be a live BREACH or FAIL
	}{
		{"the ACL's private-range drop", func(t *testing.T) {
			a, _ := c.NetworkACLByName(ctx, host.ACLName)
			var keep []incus.ACLRule
			for _, r := range a.Egress {
				if r.Destination != "192.168.0.0/16" {
					keep = append(keep, r)
				}
			}
			a.Egress = keep
			must(t, c.UpdateNetworkACL(ctx, *a))
		}, host.CheckACL, []string{"stack:acl-rules", "lan:192.168.77.10:80"}, []string{"lan:192.168.77.10:80"}},
		// The host's own subnet, numbered in public space (no private range covers the
		// neighbour 198.51.100.10): only the host-subnet drop keeps a box off it.
		{"the ACL's host-subnet drop", func(t *testing.T) {
			a, _ := c.NetworkACLByName(ctx, host.ACLName)
			var keep []incus.ACLRule
			for _, r := range a.Egress {
				if !strings.HasPrefix(r.Description, host.RuleHostNet) {
					keep = append(keep, r)
				}
			}
			if len(keep) == len(a.Egress) {
				t.Fatalf("no host-subnet drop to remove: %+v", a.Egress)
			}
			a.Egress = keep
			must(t, c.UpdateNetworkACL(ctx, *a))
		}, host.CheckACL, []string{"stack:acl-rules", "lan:198.51.100.10:80"}, []string{"lan:198.51.100.10:80"}},
		{"the ACL's sibling drop", func(t *testing.T) {
			a, _ := c.NetworkACLByName(ctx, host.ACLName)
			var keep []incus.ACLRule
			for _, r := range a.Egress {
				if r.Description != host.RuleSibling {
					keep = append(keep, r)
				}
			}
			a.Egress = keep
			must(t, c.UpdateNetworkACL(ctx, *a))
		}, host.CheckACL, []string{"stack:acl-rules"}, nil},
		{"port isolation", func(t *testing.T) {
			p, _ := c.Profile(ctx, host.ProfileName)
			delete(p.Devices["eth0"], "security.port_isolation")
			must(t, c.ReplaceProfile(ctx, *p))
		}, host.CheckProfile, []string{"stack:profile"}, nil},
		// Nothing else stops a box's root claiming a sibling's address to the host: the
		// frame goes to the bridge itself, which no box-to-box layer sees.
		{"MAC and IPv4 filtering", func(t *testing.T) {
			p, _ := c.Profile(ctx, host.ProfileName)
			delete(p.Devices["eth0"], "security.mac_filtering")
			delete(p.Devices["eth0"], "security.ipv4_filtering")
			must(t, c.ReplaceProfile(ctx, *p))
		}, host.CheckProfile, []string{"stack:profile", "sibling:arp-claim"}, []string{"sibling:arp-claim"}},
		// Each layer alone holds IPv6 link-local and LLMNR between siblings: only with all of
		// them gone (port isolation, the firewall's bridge-family drop and, since
		// br_netfilter hands bridged IPv6 to L3 hooks, its forward-to-box drop and the
		// ACL's default ingress drop) does a probe get through.
		{"every sibling layer (port isolation, the firewall, default ingress drop)", func(t *testing.T) {
			setNet(t, c, "security.acls.default.ingress.action", "allow")
			p, _ := c.Profile(ctx, host.ProfileName)
			delete(p.Devices["eth0"], "security.port_isolation")
			must(t, c.ReplaceProfile(ctx, *p))
			// br_netfilter hands bridged IPv6 to inet box/forward too (forward-to-box).
			must(t, host.Remove(h.conn))
		}, host.CheckFirewall, []string{"stack:profile", "stack:firewall", "stack:acl-attached", "sibling:ipv6-link-local"}, []string{"sibling:ipv6-link-local"}},
		{"dns.mode=none", func(t *testing.T) {
			setNet(t, c, "dns.mode", "managed")
		}, host.CheckDNSMode, []string{"stack:bridge-dns.mode", "sibling:getent-incus"}, []string{"sibling:getent-incus"}},
		{"dhcp-ignore-names", func(t *testing.T) {
			setNet(t, c, "raw.dnsmasq", "no-resolv\nserver=203.0.113.10\n")
		}, host.CheckIgnore, []string{"stack:bridge-dhcp-ignore-names", "sibling:gateway-dns"}, []string{"sibling:gateway-dns"}},
		{"the firewall tables", func(t *testing.T) {
			must(t, host.Remove(h.conn))
		}, host.CheckFirewall, []string{"stack:firewall"}, nil},
		{"ipv6.address=none", func(t *testing.T) {
			setNet(t, c, "ipv6.address", "fd42:b0c5::1/64")
		}, host.CheckIPv6, []string{"stack:bridge-ipv6-off", "ipv6:bridge"}, []string{"ipv6:bridge"}},
	}
	for _, b := range breakages {
		t.Run("without "+b.name, func(t *testing.T) {
			b.brk(t)
			out, _, code := h.run(t, "doctor", "--json", "--unit-dir", h.unitDir)
			var checks []host.Check
			if err := json.Unmarshal([]byte(out), &checks); err != nil {
				t.Fatalf("doctor --json: %v", err)
			}
			if code != 1 {
				t.Errorf("doctor exit %d, want 1", code)
			}
			found := false
			for _, ck := range checks {
				if ck.Name == b.check {
					found = true
					if ck.Status != host.Fail || !strings.Contains(ck.Fix, "box setup-host") {
						t.Errorf("doctor %s: %+v", b.check, ck)
					}
				}
			}
			if !found {
				t.Errorf("doctor has no check %s", b.check)
			}
			rs, code := h.drill(t)
			if code != 1 {
				t.Errorf("drill exit %d, want 1", code)
			}
			for _, id := range b.rows {
				if r := rs[id]; r.Status == drill.Pass || r.Status == "" {
					t.Errorf("drill row %s: %q (%s), want it caught", id, r.Status, r.Observed)
				}
			}
			for _, id := range b.breachs {
				if r := rs[id]; r.Status != drill.Breach && r.Status != drill.Fail {
					t.Errorf("drill row %s: %q (%s), want BREACH or FAIL", id, r.Status, r.Observed)
				}
			}
			for _, id := range []string{"sibling:getent", "sibling:getent-incus", "sibling:gateway-dns", "lan:192.168.77.10:80", "lan:198.51.100.10:80", "ipv6:box"} {
				t.Logf("row %s: %s (%s)", id, rs[id].Status, rs[id].Observed)
			}
			// setup-host repairs it, reporting the change; doctor passes again.
			if out := h.setup(t); !strings.Contains(out, string(host.Changed)) && !strings.Contains(out, string(host.Created)) {
				t.Errorf("setup-host did not report a repair:\n%s", out)
			}
			h.mustRun(t, "doctor", "--unit-dir", h.unitDir)
		})
	}

	t.Run("migrate-host", func(t *testing.T) {
		// A claudebox-era host: claudenet, claude-dev, a legacy box and a foreign instance.
		must(t, c.CreateNetwork(ctx, incus.Network{Name: host.LegacyBridge, Type: "bridge", Config: map[string]string{
			"ipv4.address": "10.87.0.1/24", "ipv4.nat": "true", "ipv6.address": "none"}}))
		must(t, c.CreateProfileFrom(ctx, incus.Profile{Name: host.LegacyProfile, Config: map[string]string{}, Devices: map[string]map[string]string{
			"eth0": {"type": "nic", "network": host.LegacyBridge, "name": "eth0"},
			"root": {"type": "disk", "path": "/", "pool": incuslab.Pool}}}))
		must(t, c.Create(ctx, incus.InstancesPost{Name: "legacy", Source: incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Config: map[string]string{incus.KeyLegacy: "1"}, Profiles: []string{host.LegacyProfile}}))
		must(t, c.Start(ctx, "legacy"))
		must(t, c.Create(ctx, incus.InstancesPost{Name: "foreign", Source: incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Devices: map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": incuslab.Pool}}, Profiles: []string{}}))
		_, errOut, code := h.run(t, "migrate-host", "--box", "foreign")
		if code != 1 || !strings.Contains(errOut, "not a box") {
			t.Errorf("untagged: exit %d, %s", code, errOut)
		}
		h.mustRun(t, "migrate-host", "--box", "legacy", "--dns-name", lab.InternetName)
		inst, _, err := c.Instance(ctx, "legacy")
		must(t, err)
		if inst.Config[incus.KeyBox] != "1" || inst.Config[incus.KeyUser] != "claude" || inst.Config[incus.KeyLegacy] != "" ||
			!reflect.DeepEqual(inst.Profiles, []string{host.ProfileName}) || !inst.Running() {
			t.Errorf("migrated: %+v", inst)
		}
	})

	t.Run("teardown-host", func(t *testing.T) {
		// claudebox's table too.
		h.conn.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: host.LegacyTable})
		must(t, h.conn.Flush())
		_, errOut, code := h.run(t, "teardown-host", "--unit-dir", h.unitDir)
		if code != 1 || !strings.Contains(errOut, "boxes exist: legacy") {
			t.Errorf("with boxes: exit %d, %s", code, errOut)
		}
		h.mustRun(t, "teardown-host", "--force", "--unit-dir", h.unitDir)
		if err := host.Leftovers(ctx, c, h.conn, host.BridgeName, h.unitDir); err != nil {
			t.Error(err)
		}
		if _, _, err := c.Instance(ctx, "foreign"); err != nil {
			t.Errorf("teardown touched an instance box did not mint: %v", err)
		}
		if _, _, err := c.Instance(ctx, "legacy"); !incus.IsNotFound(err) {
			t.Errorf("the box survived --force: %v", err)
		}
		_, errOut, code = h.run(t, "teardown-host", "--purge-incus", "--unit-dir", h.unitDir)
		if code != 1 || !strings.Contains(errOut, "not the system's") {
			t.Errorf("--purge-incus in the lab: exit %d, %s", code, errOut)
		}
	})

	if after := rootRuleset(t); after != rootBefore {
		t.Errorf("the machine's own ruleset changed:\nbefore:\n%s\nafter:\n%s", rootBefore, after)
	}
}

func containsLine(out, obj, outcome string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, obj) && strings.Contains(l, outcome) {
			return true
		}
	}
	return false
}

func setNet(t *testing.T, c *incus.Client, key, value string) {
	t.Helper()
	n, err := c.Network(context.Background(), host.BridgeName)
	must(t, err)
	n.Config[key] = value
	must(t, c.UpdateNetwork(context.Background(), *n))
}
