package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/backend/incus"
)

// CheckStatus is a doctor line's verdict.
type CheckStatus string

const (
	OK   CheckStatus = "ok"
	Fail CheckStatus = "FAIL"
	Warn CheckStatus = "warn"
)

// Check is one line of doctor: one invariant, checked live.
type Check struct {
	Name   string      `json:"check"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail"`
	Fix    string      `json:"fix"`
}

// DoctorOptions tune doctor.
type DoctorOptions struct {
	Bridge  string         // default BridgeName
	Pool    string         // default DefaultPool
	UnitDir string         // default DefaultUnitDir
	Exe     string         // the box binary the unit should run ("" skips that comparison)
	Conn    *nftables.Conn // nil: nftables.New()
	// Ports maps bridges to their ports (BridgePorts) for the Overreach warning; nil
	// reads sysfs.
	Ports map[string][]string
	// Remote, when set, is the name of the remote c talks to: its host's addresses come
	// through the API, and what lives on that host only (the firewall, bridge meta, port
	// overreach, the boot unit, legacy nftables tables) is a warning, not checked here.
	Remote string
}

// Check names, stable for scripts and tests.
const (
	CheckBridge     = "bridge"
	CheckIPv4       = "bridge ipv4"
	CheckIPv6       = "bridge ipv6 off"
	CheckDNSMode    = "bridge dns.mode"
	CheckIgnore     = "bridge dhcp-ignore-names"
	CheckResolver   = "bridge upstream resolver"
	CheckACL        = "acl rules"
	CheckACLAttach  = "acl attached"
	CheckProfile    = "profile"
	CheckFirewall   = "firewall"
	CheckBridgeMeta = "bridge meta"
	CheckOverreach  = "overreach"
	CheckUnit       = "boot unit"
	CheckMembers    = "cluster members" // a cluster's bridge on every member; their firewalls
	CheckBoxes      = "boxes on the stack"
	CheckLegacy     = "legacy objects"
)

// Failed reports whether any check failed.
func Failed(cs []Check) bool {
	return slices.ContainsFunc(cs, func(c Check) bool { return c.Status == Fail })
}

// Doctor checks every invariant of the stack live, one Check each, with the fix for
// each failure. It only reads.
func Doctor(ctx context.Context, c *incus.Client, o DoctorOptions) []Check {
	br := orDefault(o.Bridge, BridgeName)
	setup := "box setup-host"
	var out []Check
	add := func(name string, ok bool, detail, fix string) {
		st := OK
		if !ok {
			st = Fail
		} else {
			fix = ""
		}
		out = append(out, Check{Name: name, Status: st, Detail: detail, Fix: fix})
	}

	n, err := c.Network(ctx, br)
	if err != nil {
		add(CheckBridge, false, err.Error(), setup)
		return append(out, Check{Name: CheckFirewall, Status: Fail, Detail: "no bridge to plan the firewall for", Fix: setup})
	}
	add(CheckBridge, n.Type == "bridge" && n.Managed, fmt.Sprintf("network %s: type %s, managed %t", br, n.Type, n.Managed), setup)
	gwCIDR := n.Config["ipv4.address"]
	gw, gwErr := ParseGateway(gwCIDR)
	add(CheckIPv4, gwErr == nil && n.Config["ipv4.nat"] == "true",
		fmt.Sprintf("ipv4.address=%s ipv4.nat=%s", gwCIDR, n.Config["ipv4.nat"]), setup)
	add(CheckIPv6, n.Config["ipv6.address"] == "none", "ipv6.address="+show(n.Config["ipv6.address"]),
		setup+" (or: incus network set "+br+" ipv6.address=none)")
	add(CheckDNSMode, n.Config["dns.mode"] == "none", "dns.mode="+show(n.Config["dns.mode"]),
		setup+" (or: incus network set "+br+" dns.mode=none)")
	raw := n.Config["raw.dnsmasq"]
	add(CheckIgnore, hasLine(raw, "dhcp-ignore-names"), "raw.dnsmasq "+dnsmasqSummary(raw), setup)
	servers := ServersOf(raw)
	add(CheckResolver, len(servers) > 0 && hasLine(raw, "no-resolv"), "raw.dnsmasq "+dnsmasqSummary(raw), setup+" --resolver ADDR")

	acl, aclErr := c.NetworkACLByName(ctx, ACLName)
	switch {
	case aclErr != nil:
		add(CheckACL, false, aclErr.Error(), setup)
	case gwErr != nil:
		add(CheckACL, false, "cannot plan the ACL without the bridge's address", setup)
	default:
		var facts HostFacts
		if o.Remote != "" {
			facts, _, err = RemoteFacts(ctx, c, br)
		} else {
			facts, err = LocalFacts()
		}
		if err != nil {
			add(CheckACL, false, err.Error(), setup)
			break
		}
		plan, err := PlanStack(Stack{Bridge: br, Gateway: gw, Resolvers: PublicResolvers, HostAddrs: facts.Addrs, HostNets: facts.Nets, Pool: o.Pool})
		if err != nil {
			add(CheckACL, false, err.Error(), setup)
			break
		}
		d := ACLDiff(plan.ACL, *acl)
		detail := fmt.Sprintf("%s: %d egress drops (private ranges, siblings %s, host subnets and addresses)", ACLName, len(plan.ACL.Egress), gw.Masked())
		if len(d) > 0 {
			detail = strings.Join(d, "; ")
		}
		add(CheckACL, len(d) == 0, detail, setup)
		pp := plan.Profile
		p, err := c.Profile(ctx, ProfileName)
		if err != nil {
			add(CheckProfile, false, err.Error(), setup)
		} else {
			d := ProfileDiff(pp, *p)
			detail := ProfileName + ": NIC eth0 on " + br + " with security.port_isolation, mac_filtering and ipv4_filtering, root disk on " + orDefault(o.Pool, DefaultPool) + ", nothing else"
			if len(d) > 0 {
				detail = strings.Join(d, "; ")
			}
			add(CheckProfile, len(d) == 0, detail, setup)
		}
	}
	attached := slices.Contains(strings.Split(n.Config["security.acls"], ","), ACLName)
	add(CheckACLAttach, attached && n.Config["security.acls.default.ingress.action"] == "drop" && n.Config["security.acls.default.egress.action"] == "allow",
		fmt.Sprintf("security.acls=%s default ingress %s, egress %s", show(n.Config["security.acls"]),
			show(n.Config["security.acls.default.ingress.action"]), show(n.Config["security.acls.default.egress.action"])), setup)

	cf, err := readCluster(ctx, c)
	switch {
	case err != nil:
		out = append(out, Check{Name: CheckMembers, Status: Fail, Detail: err.Error(), Fix: "check the cluster with 'incus cluster list'"})
	case len(cf.members) > 0:
		out = append(out, memberNetworkChecks(ctx, c, br, cf))
		for _, m := range cf.others(o.Remote != "") {
			out = append(out, Check{Name: CheckFirewall + " on member " + m, Status: Warn, Detail: "not checked from here", Fix: MemberFirewallFix(m)})
		}
	}
	if o.Remote != "" {
		out = append(out, Check{Name: CheckFirewall, Status: Warn, Detail: "not checked from here", Fix: RemoteFirewallFix(o.Remote)},
			Check{Name: CheckUnit, Status: Warn, Detail: "not checked from here", Fix: RemoteFirewallFix(o.Remote)})
		out = append(out, boxesCheck(ctx, c))
		return append(out, legacyIncus(ctx, c, nil))
	}
	conn := o.Conn
	if conn == nil {
		conn, err = nftables.New()
	}
	meta, metaErr := DetectBridgeMeta()
	switch {
	case err != nil:
		add(CheckFirewall, false, err.Error(), setup+" --firewall-only")
	case gwErr != nil || metaErr != nil:
		add(CheckFirewall, false, fmt.Sprint("cannot plan: ", gwErr, metaErr), setup+" --firewall-only")
	default:
		rs, err := Plan(Inputs{Bridge: br, Gateway: gw, BridgeMeta: meta})
		var drift []string
		if err == nil {
			drift, err = Verify(conn, rs)
		}
		switch {
		case err != nil:
			add(CheckFirewall, false, err.Error(), setup+" --firewall-only")
		case len(drift) > 0:
			add(CheckFirewall, false, strings.Join(drift, "; "), setup+" --firewall-only")
		default:
			add(CheckFirewall, true, "tables bridge box and inet box match the plan", "")
		}
	}
	if metaErr != nil {
		out = append(out, Check{Name: CheckBridgeMeta, Status: Warn, Detail: metaErr.Error()})
	} else if meta {
		out = append(out, Check{Name: CheckBridgeMeta, Status: OK, Detail: "supported: box to box matched by the bridge's name"})
	} else {
		out = append(out, Check{Name: CheckBridgeMeta, Status: OK, Detail: "not supported by this kernel: box to box matched by port names " + strings.Join(DefaultPortPatterns, ", ")})
	}
	ports := o.Ports
	if ports == nil {
		ports = BridgePorts()
	}
	if over := Overreach(Inputs{Bridge: br, BridgeMeta: meta}, ports); len(over) > 0 {
		out = append(out, Check{Name: CheckOverreach, Status: Warn,
			Detail: "the port-name fallback also cuts these ports off from each other: " + strings.Join(over, ", "),
			Fix:    "set host_name on those NICs outside veth*/tap*, or use a kernel with CONFIG_NFT_BRIDGE_META"})
	} else {
		out = append(out, Check{Name: CheckOverreach, Status: OK, Detail: "no other bridge's ports match the box-to-box rule"})
	}

	unitDir := orDefault(o.UnitDir, DefaultUnitDir)
	path := filepath.Join(unitDir, UnitName)
	b, err := os.ReadFile(path)
	want := ""
	if gwErr == nil && o.Exe != "" {
		want = UnitFile(o.Exe, br, gwCIDR)
	}
	link, lerr := os.Readlink(UnitWants(unitDir))
	switch {
	case err != nil:
		add(CheckUnit, false, path+": missing", setup)
	case want != "" && string(b) != want:
		add(CheckUnit, false, path+": differs from what setup-host writes (binary path or bridge address)", setup)
	case lerr != nil || link != path:
		add(CheckUnit, false, path+": not enabled", setup)
	default:
		add(CheckUnit, true, path+": re-applies the firewall at boot", "")
	}

	out = append(out, boxesCheck(ctx, c))
	return append(out, legacyIncus(ctx, c, conn))
}

// boxesCheck: every box on the placement profile only.
func boxesCheck(ctx context.Context, c *incus.Client) Check {
	boxes, err := c.ListBoxes(ctx)
	if err != nil {
		return Check{Name: CheckBoxes, Status: Fail, Detail: err.Error()}
	}
	var off []string
	for _, b := range boxes {
		if !slices.Equal(b.Profiles, []string{ProfileName}) || hasNIC(b.Devices) {
			off = append(off, fmt.Sprintf("%s (profiles %s)", b.Name, strings.Join(b.Profiles, ",")))
		}
	}
	if len(off) > 0 {
		return Check{Name: CheckBoxes, Status: Fail, Detail: "off the stack: " + strings.Join(off, ", "), Fix: "box migrate-host --box NAME, for each"}
	}
	return Check{Name: CheckBoxes, Status: OK, Detail: fmt.Sprintf("%d boxes, all on profile %s only", len(boxes), ProfileName)}
}

// legacyIncus warns of claudebox's objects (its nftables table too, when conn is set).
func legacyIncus(ctx context.Context, c *incus.Client, conn *nftables.Conn) Check {
	var legacy []string
	if _, err := c.Network(ctx, LegacyBridge); err == nil {
		legacy = append(legacy, "network "+LegacyBridge)
	}
	if _, err := c.Profile(ctx, LegacyProfile); err == nil {
		legacy = append(legacy, "profile "+LegacyProfile)
	}
	if _, err := c.NetworkACLByName(ctx, LegacyACL); err == nil {
		legacy = append(legacy, "network ACL "+LegacyACL)
	}
	if conn != nil {
		for _, t := range FirewallTables(conn) {
			if strings.HasSuffix(t, " "+LegacyTable) {
				legacy = append(legacy, "nftables table "+t)
			}
		}
	}
	if len(legacy) > 0 {
		return Check{Name: CheckLegacy, Status: Warn, Detail: "claudebox's stack is still here: " + strings.Join(legacy, ", "),
			Fix: "box migrate-host --box NAME for each legacy box, then box teardown-host and box setup-host"}
	}
	return Check{Name: CheckLegacy, Status: OK, Detail: "none of claudebox's names"}
}

func show(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}

func hasLine(raw, line string) bool {
	for _, l := range strings.Split(raw, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

func dnsmasqSummary(raw string) string {
	var parts []string
	for _, l := range strings.Split(raw, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	if len(parts) == 0 {
		return "(unset)"
	}
	return strings.Join(parts, ", ")
}
