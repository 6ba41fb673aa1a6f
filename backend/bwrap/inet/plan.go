package inet

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/heavy-duty/box/policy"
)

// Blocked are the destination ranges the internet tier never reaches (policy.Blocked).
var Blocked = policy.Blocked

// Names of the filter's table (family inet) and chain in the sandbox's netns.
const (
	TableName = "box"
	ChainName = "output"
)

// Verdict is what a matching rule does with a packet.
type Verdict int

const (
	Accept Verdict = iota
	// Reject answers with ICMP administratively prohibited, so a blocked connect fails
	// at once instead of timing out.
	Reject
	// Redirect (nat chains only) sends the packet to the namespace's own loopback, port
	// Rule.ToPort: the allowlist tier's proxy and DNS listen there.
	Redirect
)

// Rule is one rule of the output chain. Every set field must match.
type Rule struct {
	OifLo   bool         // oif 1: lo by its index (LoopbackIndex), never by its name
	OifName string       // oifname NAME: only the unsafe build's loopback by name
	IPv6    bool         // meta nfproto ipv6
	Daddr   netip.Prefix // ip daddr, or ip6 daddr for an IPv6 prefix; invalid = any
	NotDst  bool         // Daddr negated: ip daddr != PREFIX
	Proto   string       // "udp" or "tcp", with Dport (0 = any port); "" = any
	Dport   uint16
	Verdict Verdict
	ToPort  uint16 // Redirect's port
}

// Ruleset is the egress filter as data: one inet table with one output-hook chain
// (policy accept) whose rules are evaluated in order.
type Ruleset struct {
	Table, Chain string
	Rules        []Rule
}

// Plan returns the egress filter for opts. It is pure: the host's addresses and the
// resolver come in through opts, nothing is probed.
//
// In order: loopback is accepted (the sandbox's own lo, not the host's: matched by its
// index, which no rename moves, TestLoopbackByIndexHoldsAgainstRename); IPv6 is rejected
// (the helpers run IPv4 only, this makes it hold even if one did not); DNS to the tier's
// resolver (udp 53, and tcp 53 where the helper maps it: the one exception) is accepted; Blocked ranges, the
// host's own subnets (its LAN, however numbered) and every host address are rejected; the
// rest (the public internet) is accepted.
func Plan(opts Options) Ruleset {
	rs := Ruleset{Table: TableName, Chain: ChainName}
	add := func(r Rule) { rs.Rules = append(rs.Rules, r) }
	if opts.UnsafeLoopbackName {
		add(Rule{OifName: "lo", Verdict: Accept})
	} else {
		add(Rule{OifLo: true, Verdict: Accept})
	}
	add(Rule{IPv6: true, Verdict: Reject})
	if r := ResolverAddr(opts.Helper); r.IsValid() {
		for _, p := range resolverProtos(opts) {
			add(Rule{Daddr: netip.PrefixFrom(r, 32), Proto: p, Dport: 53, Verdict: Accept})
		}
	}
	blocked := opts.Blocked
	if blocked == nil {
		blocked = Blocked
	}
	for _, p := range blocked {
		add(Rule{Daddr: p, Verdict: Reject})
	}
	for _, a := range hostBlocks(blocked, opts.HostAddrs, opts.HostNets) {
		add(Rule{Daddr: a, Verdict: Reject})
	}
	return rs
}

// resolverProtos are the protocols the filter lets reach the tier's resolver address on
// port 53: those the helper maps to the host's resolver. slirp4netns maps UDP and TCP;
// pasta (measured, Debian 12's) maps only UDP, and sends TCP to 169.254.1.1:53 out to
// that link-local address on the host's network (review finding, session 10), so its
// TCP stays rejected: a client falls back to nothing, where it reached a LAN host before.
func resolverProtos(opts Options) []string {
	if opts.Helper == Pasta && !opts.UnsafeResolverTCP {
		return []string{"udp"}
	}
	return []string{"udp", "tcp"}
}

// hostBlocks returns the host's IPv4 subnets and addresses not already inside a Blocked
// range (an address not inside one of the subnets either), sorted and deduplicated
// (IPv6 is rejected wholesale).
func hostBlocks(blocked []netip.Prefix, addrs []netip.Addr, nets []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	inside := func(a netip.Prefix) bool {
		return slices.ContainsFunc(blocked, func(p netip.Prefix) bool { return p.Overlaps(a) && p.Bits() <= a.Bits() })
	}
	for _, n := range nets {
		n = n.Masked()
		if n.IsValid() && n.Addr().Is4() && !inside(n) {
			out = append(out, n)
		}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if !a.Is4() {
			continue
		}
		p := netip.PrefixFrom(a, 32)
		if inside(p) || slices.ContainsFunc(out, func(n netip.Prefix) bool { return n.Contains(a) }) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, comparePrefix)
	return slices.Compact(out)
}

// String renders the ruleset as nft text, exactly as `nft list table inet box` prints it
// once installed (the kernel test compares the two).
func (rs Ruleset) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n\tchain %s {\n", rs.Table, rs.Chain)
	b.WriteString("\t\ttype filter hook output priority filter; policy accept;\n")
	for _, r := range rs.Rules {
		b.WriteString("\t\t" + r.String() + "\n")
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// String renders one rule in nft syntax.
func (r Rule) String() string {
	var parts []string
	if r.OifLo {
		parts = append(parts, `oif "lo"`) // nft prints the index by the name it has now
	}
	if r.OifName != "" {
		parts = append(parts, fmt.Sprintf("oifname %q", r.OifName))
	}
	if r.IPv6 {
		parts = append(parts, "meta nfproto ipv6")
	}
	if r.Daddr.IsValid() {
		d := r.Daddr.Addr().String()
		if r.Daddr.Bits() != r.Daddr.Addr().BitLen() {
			d = r.Daddr.String()
		}
		if r.NotDst {
			d = "!= " + d
		}
		family := "ip"
		if r.Daddr.Addr().Is6() {
			family = "ip6"
		}
		parts = append(parts, family+" daddr "+d)
	}
	switch {
	case r.Proto != "" && r.Dport == 0:
		parts = append(parts, "meta l4proto "+r.Proto)
	case r.Proto != "":
		parts = append(parts, fmt.Sprintf("%s dport %d", r.Proto, r.Dport))
	}
	switch r.Verdict {
	case Accept:
		parts = append(parts, "accept")
	case Reject:
		parts = append(parts, "reject with icmpx admin-prohibited")
	case Redirect:
		parts = append(parts, fmt.Sprintf("redirect to :%d", r.ToPort))
	}
	return strings.Join(parts, " ")
}
