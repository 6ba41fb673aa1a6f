package host

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
)

// Names of what setup-host makes. The placement profile is the only profile a box has.
const (
	BridgeName  = "boxnet"
	ACLName     = "box-isolate"
	ProfileName = "box-net"
	DefaultPool = "default"
	UnitName    = "box-firewall.service"
)

// Legacy names of claudebox, box's predecessor: teardown-host removes them, migrate-host
// moves boxes off them, doctor warns while they exist.
const (
	LegacyBridge  = "claudenet"
	LegacyACL     = "claude-isolate"
	LegacyProfile = "claude-dev"
	LegacyTable   = "claudebox" // nft table inet claudebox
)

// PrivateRanges are the destinations no box may reach (policy.PrivateRanges): the ACL
// drops them.
var PrivateRanges = policy.PrivateRanges

// IsPrivate reports whether a is in PrivateRanges, loopback, or not IPv4.
func IsPrivate(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() || a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	for _, p := range PrivateRanges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Stack is what the Incus side of the isolation stack is planned from. Like Inputs, the
// facts are read elsewhere and passed in, so the planners stay pure.
type Stack struct {
	Bridge  string       // default BridgeName
	Gateway netip.Prefix // the bridge's ipv4.address, e.g. 10.88.0.1/24
	// Resolvers are the upstream DNS servers the bridge's dnsmasq forwards to.
	Resolvers []netip.Addr
	// HostAddrs are the host's own addresses; the non-private IPv4 ones get an ACL drop
	// (a private one is in a dropped range already, a host subnet's one in that subnet).
	HostAddrs []netip.Addr
	// HostNets are the host's interfaces' subnets: the non-private IPv4 ones get an ACL
	// drop, for a LAN numbered in public space (a campus, a hosting provider's shared
	// subnet) is in no private range. The bridge's own is left to the sibling drop.
	HostNets []HostNet
	Pool     string // storage pool of the root disk, default DefaultPool
}

func (s Stack) bridge() string { return orDefault(s.Bridge, BridgeName) }
func (s Stack) pool() string   { return orDefault(s.Pool, DefaultPool) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// StackPlan is the Incus side of the isolation stack as plain data: what setup-host
// creates or corrects and doctor compares with.
type StackPlan struct {
	Network incus.Network
	ACL     incus.NetworkACL
	Profile incus.Profile
}

// HostNet is the subnet of one of the host's interfaces: its LAN, however numbered.
type HostNet struct {
	Prefix netip.Prefix // as configured (198.51.100.2/24); planned masked
	Iface  string       // the interface (or, through the API, the network) it is on
}

// HostFacts are what the ACL is planned from about the host: its addresses and its
// interfaces' subnets, read here (LocalFacts) or through the API (RemoteFacts).
type HostFacts struct {
	Addrs []netip.Addr
	Nets  []HostNet
}

// MinHostNetBits is the shortest host subnet the ACL drops. A public subnet wider than
// a /8 on an interface is refused, not dropped: dropping it would cut the boxes off that
// share of the internet (a /1 is half of it), and leaving it open would leave the LAN.
const MinHostNetBits = 8

// ErrWideHostNet is wrapped by PlanStack's error for a public host subnet shorter than
// MinHostNetBits.
var ErrWideHostNet = errors.New("host subnet too wide for the boxes' ACL to drop")

// PublicHostNets returns the masked non-private IPv4 subnets among nets, sorted and
// unique, leaving out those on the bridge br or equal to its subnet (the sibling drop's).
// A public one shorter than MinHostNetBits is an error naming its interface.
func PublicHostNets(nets []HostNet, br string, subnet netip.Prefix) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, n := range nets {
		a := n.Prefix.Addr().Unmap() // the configured address: a /0's masked one is 0.0.0.0
		p := netip.PrefixFrom(a, n.Prefix.Bits()).Masked()
		if !p.IsValid() || !a.Is4() || a.IsLoopback() || a.IsUnspecified() || n.Iface == br || p == subnet || insidePrivate(p) {
			continue
		}
		if p.Bits() < MinHostNetBits {
			return nil, errs.WithHint(fmt.Errorf("%s on %s: %w (a /%d; the shortest dropped is /%d)", n.Prefix, n.Iface, ErrWideHostNet, p.Bits(), MinHostNetBits),
				"give "+n.Iface+" its real subnet's prefix length: dropping "+p.String()+" would cut the boxes off that share of the internet, not dropping it would leave them the host's LAN")
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out), nil
}

// insidePrivate reports whether all of p lies in one of PrivateRanges.
func insidePrivate(p netip.Prefix) bool {
	return slices.ContainsFunc(PrivateRanges, func(r netip.Prefix) bool { return r.Bits() <= p.Bits() && r.Contains(p.Addr()) })
}

// PublicHostAddrs returns the non-private IPv4 addresses among addrs, sorted and unique.
func PublicHostAddrs(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); !IsPrivate(a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// DnsmasqRaw is the bridge's raw.dnsmasq: dhcp-ignore-names keeps box names out of
// dnsmasq (with dns.mode=none alone it still answers a sibling's bare name from its
// leases); no-resolv and server= pin the upstream resolvers instead of the host's
// resolv.conf.
func DnsmasqRaw(resolvers []netip.Addr) string {
	var b strings.Builder
	b.WriteString("dhcp-ignore-names\nno-resolv\n")
	for _, r := range resolvers {
		fmt.Fprintf(&b, "server=%s\n", r)
	}
	return b.String()
}

// Rule descriptions name the ACL's rules for doctor, the drill and tests.
const (
	RulePrivate = "private range "
	RuleSibling = "siblings: the bridge's own subnet"
	RuleHost    = "host address "
	RuleHostNet = "host subnet "
)

// PlanStack plans the bridge, the ACL and the placement profile. It is pure.
//
//   - the bridge: IPv4 only (ipv6.address=none is a contract), NAT, dns.mode=none and
//     dnsmasq ignoring client names (no sibling can be named), the ACL attached with
//     default ingress drop and default egress allow (what the ACL drops is dropped);
//   - the ACL: egress drops to every private range, to the bridge's own subnet (the
//     sibling drop, derived from the gateway, never written), to each non-private host
//     subnet (the host's LAN however numbered; one wider than /8 is refused) and to each
//     non-private host address outside those; Incus's own chains keep DHCP and DNS to
//     the gateway working;
//   - the profile: the NIC on the bridge with port isolation, and the root disk; nothing
//     else, so no template and no profile key can move a box off the stack.
func PlanStack(s Stack) (StackPlan, error) {
	br := s.bridge()
	if err := validIfname(br); err != nil {
		return StackPlan{}, fmt.Errorf("bridge: %w", err)
	}
	if err := checkGateway(s.Gateway); err != nil {
		return StackPlan{}, err
	}
	if len(s.Resolvers) == 0 {
		return StackPlan{}, errors.New("no upstream resolver for the boxes")
	}
	for _, r := range s.Resolvers {
		if !r.Is4() {
			return StackPlan{}, fmt.Errorf("resolver %s: not IPv4 (the box bridge is IPv4 only)", r)
		}
	}
	subnet := s.Gateway.Masked()
	hostNets, err := PublicHostNets(s.HostNets, br, subnet)
	if err != nil {
		return StackPlan{}, err
	}

	network := incus.Network{
		Name:        br,
		Type:        "bridge",
		Description: "box: the box bridge (managed by box setup-host)",
		Config: map[string]string{
			"ipv4.address":                         s.Gateway.String(),
			"ipv4.nat":                             "true",
			"ipv6.address":                         "none",
			"dns.mode":                             "none",
			"raw.dnsmasq":                          DnsmasqRaw(s.Resolvers),
			"security.acls":                        ACLName,
			"security.acls.default.ingress.action": "drop",
			"security.acls.default.egress.action":  "allow",
		},
	}

	drop := func(dst, desc string) incus.ACLRule {
		return incus.ACLRule{Action: "drop", Destination: dst, Description: desc, State: "enabled"}
	}
	var egress []incus.ACLRule
	for _, p := range PrivateRanges {
		egress = append(egress, drop(p.String(), RulePrivate+p.String()))
	}
	egress = append(egress, drop(subnet.String(), RuleSibling))
	for _, p := range hostNets {
		egress = append(egress, drop(p.String(), RuleHostNet+p.String()))
	}
	for _, a := range PublicHostAddrs(s.HostAddrs) {
		if !slices.ContainsFunc(hostNets, func(p netip.Prefix) bool { return p.Contains(a) }) {
			egress = append(egress, drop(a.String()+"/32", RuleHost+a.String()))
		}
	}
	acl := incus.NetworkACL{
		Name:        ACLName,
		Description: "box: boxes reach the public internet only (managed by box setup-host)",
		Egress:      egress,
		Ingress:     []incus.ACLRule{},
		Config:      map[string]string{},
	}

	profile := incus.Profile{
		Name:        ProfileName,
		Description: "box: placement of every box: the NIC on the box bridge and the root disk, nothing else (managed by box setup-host)",
		Config:      map[string]string{},
		Devices: map[string]map[string]string{
			// Port isolation: no frame from one box port to another. MAC and IPv4
			// filtering (Incus's per-NIC bridge filter): ARP and IPv4 from the box only
			// with the MAC and the address Incus gave it, so a box's root cannot claim a
			// sibling's address to the host (the host would send it the sibling's
			// replies). The bridge still learns a MAC from the frames the filter drops
			// (docs/host.md: the MAC-learning gap).
			"eth0": {"type": "nic", "network": br, "name": "eth0", "security.port_isolation": "true",
				"security.mac_filtering": "true", "security.ipv4_filtering": "true"},
			"root": {"type": "disk", "path": "/", "pool": s.pool()},
		},
	}
	return StackPlan{Network: network, ACL: acl, Profile: profile}, nil
}

// Claim is a range some other part of the machine uses: a route, another bridge's or
// interface's subnet, the default gateway.
type Claim struct {
	Prefix netip.Prefix
	By     string // e.g. "route 10.0.0.0/8 dev eth0", "default gateway 10.0.0.1"
}

// SubnetCandidates are tried in order when no subnet is pinned: 10.88.0.0/24 (upstream's
// choice), then 10.88.1.0/24 ... 10.89.255.0/24.
func SubnetCandidates() []netip.Prefix {
	var out []netip.Prefix
	for b2 := 88; b2 <= 89; b2++ {
		for b3 := 0; b3 <= 255; b3++ {
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(b2), byte(b3), 0}), 24))
		}
	}
	return out
}

// ErrClaimed is wrapped by ChooseSubnet's error when a pinned subnet is in use.
var ErrClaimed = errors.New("subnet already claimed")

// ChooseSubnet returns the bridge's gateway CIDR: the pinned subnet when it is free (a
// network address gets its first host as gateway; a host address is kept), else the
// first free candidate. A claimed pinned subnet is refused naming the claimant. It is
// pure.
func ChooseSubnet(claims []Claim, pinned string) (netip.Prefix, error) {
	if pinned != "" {
		p, err := netip.ParsePrefix(strings.TrimSpace(pinned))
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("subnet %q: %w", pinned, err)
		}
		if p.Addr() == p.Masked().Addr() {
			p = netip.PrefixFrom(p.Addr().Next(), p.Bits())
		}
		if err := checkGateway(p); err != nil {
			return netip.Prefix{}, fmt.Errorf("subnet %q: %w", pinned, err)
		}
		if by := claimant(claims, p.Masked()); by != "" {
			return netip.Prefix{}, fmt.Errorf("subnet %s: %w by %s", p.Masked(), ErrClaimed, by)
		}
		return p, nil
	}
	for _, c := range SubnetCandidates() {
		if claimant(claims, c) == "" {
			return netip.PrefixFrom(c.Addr().Next(), c.Bits()), nil
		}
	}
	return netip.Prefix{}, errors.New("no free subnet among 10.88.0.0/24..10.89.255.0/24: pin one with --subnet")
}

func claimant(claims []Claim, p netip.Prefix) string {
	for _, c := range claims {
		if c.Prefix.IsValid() && c.Prefix.Overlaps(p) {
			return c.By
		}
	}
	return ""
}
