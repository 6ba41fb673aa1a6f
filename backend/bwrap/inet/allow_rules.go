package inet

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
)

// The allowlist tier's sandbox netns has no uplink at all: only lo, with LocalAddr on it
// and a default route through lo (without a route, connect to a public address fails
// before netfilter sees it). Every TCP connection is redirected to ProxyPort on loopback,
// every DNS query to DNSPort; box holds the listening sockets (created in the netns by the
// setup helper, passed out as fds) and decides in its own netns.
var (
	// LocalAddr is the sandbox's own address (the source of its connections).
	LocalAddr = netip.MustParseAddr("10.0.2.15")
	// Loopback is where box's proxy and DNS listen inside the netns.
	Loopback = netip.MustParseAddr("127.0.0.1")
)

// Ports of the box-owned listeners inside the sandbox's netns. Port 1 (tcpmux) is below
// 1024, so the sandboxed command, without CAP_NET_BIND_SERVICE, can never take it.
const (
	ProxyPort = 1
	DNSPort   = 53
)

// Table is an nftables table (family inet) of several chains, each on the output hook.
type Table struct {
	Name   string
	Chains []Chain
}

// Chain is one output-hook chain, policy accept; NAT chains run at priority -100 (dstnat)
// (-100), before the filter chains (priority filter, 0).
type Chain struct {
	Name  string
	NAT   bool
	Rules []Rule
}

// AllowPlan is the allowlist tier's nftables table. Pure.
//
// nat: TCP to anything but loopback goes to the proxy; UDP port 53 to anything but
// loopback goes to box's DNS (so a program with a hard-coded resolver is answered too).
// output: loopback and the sandbox's own address are accepted (the redirected
// connections and their replies), everything else is rejected: other UDP, ICMP, IPv6 off
// ::1. Without an uplink nothing could leave anyway; the reject makes it fail at once.
func AllowPlan() Table {
	lo8 := netip.MustParsePrefix("127.0.0.0/8")
	return Table{Name: TableName, Chains: []Chain{
		{Name: "redirect", NAT: true, Rules: []Rule{
			{Daddr: lo8, NotDst: true, Proto: "tcp", Verdict: Redirect, ToPort: ProxyPort},
			{Daddr: lo8, NotDst: true, Proto: "udp", Dport: 53, Verdict: Redirect, ToPort: DNSPort},
		}},
		{Name: ChainName, Rules: []Rule{
			{Daddr: lo8, Verdict: Accept},
			{Daddr: netip.PrefixFrom(LocalAddr, 32), Verdict: Accept},
			{Daddr: netip.MustParsePrefix("::1/128"), Verdict: Accept},
			{Verdict: Reject},
		}},
	}}
}

// String renders the table as `nft list table inet NAME` prints it.
func (t Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", t.Name)
	for i, c := range t.Chains {
		if i > 0 {
			b.WriteString("\n")
		}
		typ, prio := "filter", "filter"
		if c.NAT {
			typ, prio = "nat", "-100"
		}
		fmt.Fprintf(&b, "\tchain %s {\n\t\ttype %s hook output priority %s; policy accept;\n", c.Name, typ, prio)
		for _, r := range c.Rules {
			b.WriteString("\t\t" + r.String() + "\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// ApplyTable installs t in the namespace of c in one batch, replacing any previous table
// of the same name.
func ApplyTable(c *nftables.Conn, t Table) error {
	nt := &nftables.Table{Family: nftables.TableFamilyINet, Name: t.Name}
	c.AddTable(nt)
	c.DelTable(nt)
	c.AddTable(nt)
	policy := nftables.ChainPolicyAccept
	for _, ch := range t.Chains {
		typ, prio := nftables.ChainTypeFilter, nftables.ChainPriorityFilter
		if ch.NAT {
			typ, prio = nftables.ChainTypeNAT, nftables.ChainPriorityNATDest
		}
		nc := c.AddChain(&nftables.Chain{Name: ch.Name, Table: nt, Type: typ,
			Hooknum: nftables.ChainHookOutput, Priority: prio, Policy: &policy})
		for _, r := range ch.Rules {
			c.AddRule(&nftables.Rule{Table: nt, Chain: nc, Exprs: r.exprs()})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install nftables table inet %s: %w", t.Name, err)
	}
	return nil
}

// VerifyTable checks every chain of t is installed on the output hook with as many rules.
func VerifyTable(c *nftables.Conn, t Table) error {
	for _, ch := range t.Chains {
		if err := Verify(c, Ruleset{Table: t.Name, Chain: ch.Name, Rules: ch.Rules}); err != nil {
			return err
		}
	}
	return nil
}
