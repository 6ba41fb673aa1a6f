package host

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// TableName names both box tables (bridge box, inet box). Box owns these tables and
// nothing else: Apply and Remove touch no other table.
const TableName = "box"

// DefaultPortPatterns are the host-side names Incus gives bridged NICs when the NIC sets
// no host_name: veth<random> for containers, tap<random> for VMs (nic_bridged.go).
var DefaultPortPatterns = []string{"veth*", "tap*"}

// Inputs are the facts the planner needs. They are detected or read elsewhere (the Incus
// network, DetectBridgeMeta) and passed in, so Plan stays pure.
type Inputs struct {
	// Bridge is the box bridge, e.g. "boxnet".
	Bridge string
	// Gateway is the bridge's own address with its prefix length, as Incus reports it in
	// ipv4.address (e.g. 10.88.0.1/24). The subnet is derived from it, never written.
	Gateway netip.Prefix
	// BridgeMeta says the kernel supports meta ibrname/obrname (CONFIG_NFT_BRIDGE_META).
	BridgeMeta bool
	// PortPatterns name the box bridge's ports when BridgeMeta is false: an exact name or
	// a prefix ending in '*'. Empty means DefaultPortPatterns.
	PortPatterns []string
}

// SubnetOf returns the subnet of a gateway CIDR: SubnetOf("10.88.0.1/24") = 10.88.0.0/24.
func SubnetOf(gatewayCIDR string) (netip.Prefix, error) {
	p, err := ParseGateway(gatewayCIDR)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// ParseGateway parses the bridge address as Incus reports it (ipv4.address, e.g.
// 10.88.0.1/24): an IPv4 host address with its prefix length.
func ParseGateway(cidr string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("gateway %q: %w", cidr, err)
	}
	if err := checkGateway(p); err != nil {
		return netip.Prefix{}, err
	}
	return p, nil
}

func checkGateway(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return errors.New("gateway: not set")
	case !p.Addr().Is4():
		return fmt.Errorf("gateway %s: not IPv4 (the box bridge is IPv4 only)", p)
	case p.Bits() < 8 || p.Bits() > 30:
		return fmt.Errorf("gateway %s: prefix length %d, want 8..30", p, p.Bits())
	case p.Addr() == p.Masked().Addr():
		// A network address as gateway means the caller passed the subnet, not ipv4.address.
		return fmt.Errorf("gateway %s: is the network address, want the bridge's own address", p)
	}
	return nil
}

// Validate reports inputs Plan cannot turn into a complete ruleset.
func (in Inputs) Validate() error {
	if err := validIfname(in.Bridge); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	if err := checkGateway(in.Gateway); err != nil {
		return err
	}
	for _, p := range in.PortPatterns {
		if err := validIfname(p); err != nil {
			return fmt.Errorf("port pattern: %w", err)
		}
		// A bare "*" would drop every bridged frame on the host (Docker, other bridges).
		if strings.TrimSuffix(p, "*") == "" {
			return fmt.Errorf("port pattern %q matches every interface", p)
		}
	}
	return nil
}

func validIfname(s string) error {
	name := strings.TrimSuffix(s, "*")
	switch {
	case s == "":
		return errors.New("empty interface name")
	case len(name) > 15: // IFNAMSIZ-1
		return fmt.Errorf("interface name %q longer than 15 bytes", s)
	case strings.ContainsAny(name, "*\"/ \t\n\x00"):
		return fmt.Errorf("interface name %q: bad character", s)
	}
	return nil
}

// Ruleset is the planned host firewall: plain data, rendered as nft text by String and
// sent to the kernel by Apply.
type Ruleset struct {
	Tables []Table
}

// Family is an nftables address family box uses.
type Family string

const (
	FamilyBridge Family = "bridge"
	FamilyInet   Family = "inet"
)

// Table is one nftables table.
type Table struct {
	Family Family
	Name   string
	Chains []Chain
}

// Chain is a base chain of type filter at the family's filter priority with policy
// accept: box only ever drops its own traffic, so it never needs to outvote (or be
// outvoted by) another table's accept; a drop in any table is final.
type Chain struct {
	Name  string
	Hook  string // "input", "forward" or "output"
	Rules []Rule
}

// Rule is a conjunction of matches and a verdict.
type Rule struct {
	// Name identifies the rule (or a group of rules) to tests and doctor; it is not sent
	// to the kernel.
	Name    string
	Match   []Match
	Verdict Verdict
}

// Verdict ends a rule.
type Verdict string

const (
	Accept Verdict = "accept"
	Drop   Verdict = "drop"
)

// Match is one condition of a rule. The set of matches is closed (this package).
type Match interface {
	String() string
	isMatch()
}

// Iface matches the input (or output) interface name; a Name ending in '*' matches a
// prefix. In the bridge family this is the bridge port, in inet the bridge itself.
type Iface struct {
	Out  bool
	Name string
}

// BridgeIface matches the bridge that the input (or output) port belongs to
// (meta ibrname/obrname; needs CONFIG_NFT_BRIDGE_META).
type BridgeIface struct {
	Out  bool
	Name string
}

// Addr matches the IPv4 source (or destination) address against a prefix.
type Addr struct {
	Dst    bool
	Prefix netip.Prefix
}

// Port matches a TCP or UDP source (or destination) port.
type Port struct {
	Proto Proto
	Dst   bool
	Port  uint16
}

// Proto is a transport protocol.
type Proto string

const (
	TCP Proto = "tcp"
	UDP Proto = "udp"
)

// CtEstablishedRelated matches packets of a connection conntrack has already seen both
// ways, or related to one (ICMP errors).
type CtEstablishedRelated struct{}

func (Iface) isMatch()                {}
func (BridgeIface) isMatch()          {}
func (Addr) isMatch()                 {}
func (Port) isMatch()                 {}
func (CtEstablishedRelated) isMatch() {}

func (m Iface) String() string {
	return fmt.Sprintf("%s %q", pick(m.Out, "oifname", "iifname"), m.Name)
}

func (m BridgeIface) String() string {
	return fmt.Sprintf("meta %s %q", pick(m.Out, "obrname", "ibrname"), m.Name)
}

func (m Addr) String() string {
	s := m.Prefix.String()
	if m.Prefix.IsSingleIP() {
		s = m.Prefix.Addr().String()
	}
	return fmt.Sprintf("ip %s %s", pick(m.Dst, "daddr", "saddr"), s)
}

func (m Port) String() string {
	return fmt.Sprintf("%s %s %d", m.Proto, pick(m.Dst, "dport", "sport"), m.Port)
}

func (CtEstablishedRelated) String() string { return "ct state established,related" }

func pick(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// String renders the rule as `nft list` prints it.
func (r Rule) String() string {
	var b strings.Builder
	for _, m := range r.Match {
		b.WriteString(m.String())
		b.WriteByte(' ')
	}
	b.WriteString(string(r.Verdict))
	return b.String()
}

// String renders the ruleset as `nft list table` prints each table, so one golden file
// checks both the plan and the kernel's reading of it.
func (rs Ruleset) String() string {
	var b strings.Builder
	for _, t := range rs.Tables {
		fmt.Fprintf(&b, "table %s %s {\n", t.Family, t.Name)
		for i, c := range t.Chains {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
			fmt.Fprintf(&b, "\t\ttype filter hook %s priority filter; policy accept;\n", c.Hook)
			for _, r := range c.Rules {
				fmt.Fprintf(&b, "\t\t%s\n", r)
			}
			b.WriteString("\t}\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// Plan builds the host firewall for the box bridge. It is pure: same inputs, same
// ruleset.
//
//   - bridge box/forward: frames switched between two ports of the box bridge (box to
//     box) are dropped. An L3 ACL never sees them. With bridge meta the bridge is
//     matched by name; without it, by the ports' names (see PortPatterns, and the
//     package doc for the limits of that fallback).
//   - inet box/input: the box bridge reaches the host only for DHCP and DNS to the
//     gateway (from the box subnet, so a box cannot use the host's resolver to reflect
//     spoofed replies elsewhere).
//   - inet box/forward and output: nothing new enters the bridge from the host or
//     through it; replies to the boxes' own connections, and the DHCP server's replies
//     (conntrack sees a reply to a broadcast DISCOVER as new), pass.
func Plan(in Inputs) (Ruleset, error) {
	if err := in.Validate(); err != nil {
		return Ruleset{}, err
	}
	br := in.Bridge
	gw := netip.PrefixFrom(in.Gateway.Addr(), 32)
	subnet := in.Gateway.Masked()
	bcast := netip.PrefixFrom(netip.AddrFrom4([4]byte{255, 255, 255, 255}), 32)

	var l2 []Rule
	if in.BridgeMeta {
		l2 = []Rule{{
			Name:    "box-to-box",
			Match:   []Match{BridgeIface{Name: br}, BridgeIface{Out: true, Name: br}},
			Verdict: Drop,
		}}
	} else {
		pats := in.PortPatterns
		if len(pats) == 0 {
			pats = DefaultPortPatterns
		}
		for _, from := range pats {
			for _, to := range pats {
				l2 = append(l2, Rule{
					Name:    "box-to-box", // one name for the group: they stand or fall together
					Match:   []Match{Iface{Name: from}, Iface{Out: true, Name: to}},
					Verdict: Drop,
				})
			}
		}
	}

	iif, oif := Iface{Name: br}, Iface{Out: true, Name: br}
	input := []Rule{
		{Name: "dhcp-broadcast", Verdict: Accept, Match: []Match{
			iif, Addr{Dst: true, Prefix: bcast}, Port{UDP, false, DHCPClientPort}, Port{UDP, true, DHCPServerPort}}},
		{Name: "dhcp", Verdict: Accept, Match: []Match{
			iif, Addr{Dst: true, Prefix: gw}, Port{UDP, false, DHCPClientPort}, Port{UDP, true, DHCPServerPort}}},
		{Name: "dns-udp", Verdict: Accept, Match: []Match{
			iif, Addr{Prefix: subnet}, Addr{Dst: true, Prefix: gw}, Port{UDP, true, DNSPort}}},
		{Name: "dns-tcp", Verdict: Accept, Match: []Match{
			iif, Addr{Prefix: subnet}, Addr{Dst: true, Prefix: gw}, Port{TCP, true, DNSPort}}},
		{Name: "box-to-host", Verdict: Drop, Match: []Match{iif}},
	}
	forward := []Rule{
		{Name: "forward-replies", Verdict: Accept, Match: []Match{oif, CtEstablishedRelated{}}},
		{Name: "forward-to-box", Verdict: Drop, Match: []Match{oif}},
	}
	output := []Rule{
		{Name: "output-replies", Verdict: Accept, Match: []Match{oif, CtEstablishedRelated{}}},
		{Name: "dhcp-reply", Verdict: Accept, Match: []Match{
			oif, Addr{Prefix: gw}, Port{UDP, false, DHCPServerPort}, Port{UDP, true, DHCPClientPort}}},
		{Name: "host-to-box", Verdict: Drop, Match: []Match{oif}},
	}

	return Ruleset{Tables: []Table{
		{Family: FamilyBridge, Name: TableName, Chains: []Chain{
			{Name: "forward", Hook: "forward", Rules: l2},
		}},
		{Family: FamilyInet, Name: TableName, Chains: []Chain{
			{Name: "input", Hook: "input", Rules: input},
			{Name: "forward", Hook: "forward", Rules: forward},
			{Name: "output", Hook: "output", Rules: output},
		}},
	}}, nil
}

// Without returns a copy of rs without the named rules. Tests use it to prove that each
// probe fails when the rule it relies on is missing; doctor can use it to explain.
func (rs Ruleset) Without(names ...string) Ruleset {
	drop := make(map[string]bool, len(names))
	for _, n := range names {
		drop[n] = true
	}
	out := Ruleset{Tables: make([]Table, 0, len(rs.Tables))}
	for _, t := range rs.Tables {
		nt := Table{Family: t.Family, Name: t.Name}
		for _, c := range t.Chains {
			nc := Chain{Name: c.Name, Hook: c.Hook}
			for _, r := range c.Rules {
				if !drop[r.Name] {
					nc.Rules = append(nc.Rules, r)
				}
			}
			nt.Chains = append(nt.Chains, nc)
		}
		out.Tables = append(out.Tables, nt)
	}
	return out
}

// Overreach lists, as "bridge/port", the ports of bridges other than in.Bridge that the
// fallback's port patterns also match: frames between two such ports on one bridge are
// dropped too (e.g. containers on docker0). Nothing when bridge meta is used. ports maps
// each bridge on the host to its ports; doctor reads it and warns with this.
func Overreach(in Inputs, ports map[string][]string) []string {
	if in.BridgeMeta {
		return nil
	}
	pats := in.PortPatterns
	if len(pats) == 0 {
		pats = DefaultPortPatterns
	}
	var out []string
	for br, ps := range ports {
		if br == in.Bridge {
			continue
		}
		var hit []string
		for _, p := range ps {
			if matchesAny(p, pats) {
				hit = append(hit, br+"/"+p)
			}
		}
		if len(hit) >= 2 { // one matching port alone has no peer to be cut off from
			out = append(out, hit...)
		}
	}
	slices.Sort(out)
	return out
}

func matchesAny(name string, pats []string) bool {
	for _, p := range pats {
		if pre, ok := strings.CutSuffix(p, "*"); (ok && strings.HasPrefix(name, pre)) || name == p {
			return true
		}
	}
	return false
}
