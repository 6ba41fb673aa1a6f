package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/heavy-duty/box/internal/closest"
)

// Tier is a network tier: a closed set, in order of exposure (Tiers). It is a string so
// profiles' TOML and the --network flag parse into it as they are.
type Tier string

// The network tiers.
const (
	// NetNone: a network namespace of its own with only loopback.
	NetNone Tier = "none"
	// NetInternet: a namespace of its own, wired to the public internet by a user-mode
	// helper (pasta or slirp4netns) behind an egress filter.
	NetInternet Tier = "internet"
	// NetFull: the host's own network, named explicitly by the operator.
	NetFull Tier = "full"
	// NetAllowlist: named hosts only, through box's proxy (the bwrap backend).
	NetAllowlist Tier = "allowlist"
)

// Tiers lists the network tiers in order of exposure.
var Tiers = []Tier{NetNone, NetAllowlist, NetInternet, NetFull}

// TierNames are the tiers' names, in order of exposure.
func TierNames() []string {
	out := make([]string, len(Tiers))
	for i, t := range Tiers {
		out[i] = string(t)
	}
	return out
}

// TierList words the tiers for a sentence: "none, allowlist, internet or full" with
// conj "or".
func TierList(conj string) string { return TierListWhere(Tier.Valid, conj) }

// TierListWhere words the tiers answering q yes, in Tiers' order, for a sentence:
// TierListWhere(Tier.OwnNetNS, "or") is "none, allowlist or internet", and with conj ""
// "none, allowlist, internet". Help and hints name a feature's tiers with it, so a tier
// added to Tiers is in every such list.
func TierListWhere(q func(Tier) bool, conj string) string {
	var n []string
	for _, t := range Tiers {
		if q(t) {
			n = append(n, string(t))
		}
	}
	if conj == "" || len(n) < 2 {
		return strings.Join(n, ", ")
	}
	return strings.Join(n[:len(n)-1], ", ") + " " + conj + " " + n[len(n)-1]
}

// ParseTier checks a tier name.
func ParseTier(s string) (Tier, error) {
	t := Tier(s)
	if !t.Valid() {
		return "", &TierError{Name: s}
	}
	return t, nil
}

// TierError is a name that is no tier.
type TierError struct{ Name string }

func (e *TierError) Error() string {
	return fmt.Sprintf("network %q: want one of %s", e.Name, strings.Join(TierNames(), ", "))
}

// DidYouMean is a hint's "did you mean 'none'?" ("" when no tier is close).
func (e *TierError) DidYouMean() string {
	c := e.Closest()
	if len(c) == 0 {
		return ""
	}
	return "did you mean '" + strings.Join(c, "' or '") + "'?"
}

// Closest are the tiers the name was probably meant to be ("nonee": none), for a hint.
func (e *TierError) Closest() []string {
	if e.Name == "" {
		return nil
	}
	return closest.Names(e.Name, TierNames())
}

// Valid reports whether t is one of Tiers.
func (t Tier) Valid() bool { return slices.Contains(Tiers, t) }

// OwnNetNS reports whether the sandbox has a network namespace of its own (every tier
// but full, which shares the host's network, its abstract unix sockets included).
func (t Tier) OwnNetNS() bool { return t == NetNone || t == NetInternet || t == NetAllowlist }

// SharesHostNet reports whether the sandbox is on the host's network namespace: the
// host's interfaces, LAN and abstract unix sockets are reachable, and its resolver is the
// host's.
func (t Tier) SharesHostNet() bool { return t == NetFull }

// Offline reports whether the sandbox has no network beyond loopback.
func (t Tier) Offline() bool { return t == NetNone }

// NeedsHelper reports whether the tier is wired by a user-mode network helper (pasta or
// slirp4netns) behind box's egress filter.
func (t Tier) NeedsHelper() bool { return t == NetInternet }

// Proxied reports whether the sandbox reaches the network only through box's proxy, on
// the names of an allowlist (the profile's allow key and --allow).
func (t Tier) Proxied() bool { return t == NetAllowlist }

// OwnResolver reports whether box writes the sandbox's resolv.conf (the helper's or the
// proxy's resolver) and wires the namespace before the command is released.
func (t Tier) OwnResolver() bool { return t.NeedsHelper() || t.Proxied() }

// Within reports whether a sandbox of tier t reaches nothing one of tier u does not
// (trust: state a run leaves is obeyed by a later run only when the later run's reach
// holds the earlier's). An allowlist is within another only as far as its names are,
// which the caller compares; never within internet, as it may name private hosts.
func (t Tier) Within(u Tier) bool {
	switch t {
	case NetNone:
		return true
	case NetAllowlist:
		return u == NetAllowlist || u == NetFull
	case NetInternet:
		return u == NetInternet || u == NetFull
	case NetFull:
		return u == NetFull
	}
	return false // an unknown tier reaches who knows what
}

// VMCapable reports whether a vm box may have the tier (a vm box is always isolated on
// box's bridge: never the host's network, and no proxy).
func (t Tier) VMCapable() bool { return t == NetNone || t == NetInternet }

// Explain is what SANDBOX.md tells the agent about its tier ("" for an unknown one): each
// tier in the agent's words, what the sandbox reaches and what to do when something is
// out of reach. A switch, not a map: nothing of it is built before a box asks (issue 24).
func (t Tier) Explain() string {
	switch t {
	case NetNone:
		return "none: there is no network at all (only loopback). Downloads will fail; ask the operator for what you need."
	case NetInternet:
		return "internet: the public internet only. The host (its addresses and subnets as of launch), the LAN, IPv6, and the private and special-purpose ranges (" + rangeList() + ", the cloud metadata address 169.254.169.254 with them) are blocked."
	case NetFull:
		return "full: the host's network, as the operator chose explicitly. Be careful: the LAN and the host's services are reachable."
	case NetAllowlist:
		return "allowlist: only the host names below, on ports 80 and 443 unless a port is named, through box's proxy (it reads the TLS server name or the HTTP Host; it does not decrypt). Names not listed do not resolve, connections by address are refused, and so are UDP (except DNS), ICMP and IPv6. Proxy variables are not needed: every TCP connection goes through box whatever the program."
	}
	return ""
}

// rangeList names the catalogue's ranges (Unreachable) for the agent.
func rangeList() string {
	var out []string
	for _, r := range Unreachable {
		out = append(out, r.Prefix.String())
	}
	return strings.Join(out, ", ")
}
