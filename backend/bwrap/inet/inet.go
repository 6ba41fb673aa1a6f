// Package inet is the mechanism of the bwrap backend's "internet" network tier: user-mode
// networking (pasta, or slirp4netns as the fallback) attached to the sandbox's own network
// namespace, plus an nftables egress filter inside that namespace that rejects the host,
// the LAN, private, CGNAT, link-local (metadata), loopback and reserved ranges. User-mode
// networking alone dials from the host, so without the filter the LAN and the host's own
// addresses stay reachable.
//
// The caller launches bwrap with --unshare-net --info-fd N --block-fd M (and --dev, which
// makes bwrap map uid 0 in its outer user namespace: the filter helper needs it), binds
// ResolvConf(helper) at /etc/resolv.conf, reads the child pid from the info fd, calls
// Attach, and writes to the block fd only when Attach succeeded. On error it kills bwrap:
// closing the block fd would release the sandbox unfiltered.
//
// The filter is installed by a helper process that nsenter(1) puts in the user namespace
// owning the sandbox's netns (a Go process cannot setns into a user namespace): the box
// binary re-executed as "box __inet-filter" (FilterSubcommand), which calls FilterMain.
// The sandboxed command lives in bwrap's nested user namespace without capabilities, so
// it cannot change the filter.
package inet

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
)

// Helper names the user-mode networking program.
type Helper string

const (
	// Auto picks pasta when it is installed, else slirp4netns.
	Auto        Helper = ""
	Pasta       Helper = "pasta"
	Slirp4netns Helper = "slirp4netns"
)

// FilterSubcommand is the hidden box subcommand that must call FilterMain with the
// arguments that follow it: `box __inet-filter ARGS...` -> os.Exit(inet.FilterMain(ARGS)).
const FilterSubcommand = "__inet-filter"

// Fixed resolver addresses, known before bwrap starts (resolv.conf is a bind mount).
// slirp4netns answers DNS at 10.0.2.3 by design; pasta forwards what is sent to the
// --dns-forward address, and 169.254.1.1 is the one podman uses for the same purpose.
// Both forward to the host's first nameserver in /etc/resolv.conf.
var (
	PastaResolver = netip.MustParseAddr("169.254.1.1")
	SlirpResolver = netip.MustParseAddr("10.0.2.3")
)

// Options configure the tier. The zero value works: auto helper, tools from PATH, the
// running binary as filter helper; the caller should set HostAddrs from HostAddrs().
type Options struct {
	Helper Helper
	// HelperPath, NsenterPath: the programs; empty = looked up on PATH.
	HelperPath  string
	NsenterPath string
	// FilterCommand runs FilterMain once nsenter has entered the namespaces; its first
	// element is the program. Empty = this very binary (opened as /proc/self/exe, so a
	// replaced or deleted binary still works) with FilterSubcommand.
	FilterCommand []string
	// HostAddrs are the addresses the host owns at launch: each is rejected (those inside
	// a Blocked range already are). Pass HostAddrs().
	HostAddrs []netip.Addr
	// HostNets are the host's own IPv4 subnets at launch (its LAN, however numbered) and
	// the prefixes it routes to networks of its own (a VPN's): each is rejected (those
	// inside a Blocked range already are). Pass HostNets() and HostRoutes().
	HostNets []netip.Prefix
	// UnsafeResolverTCP lets TCP to pasta's resolver address through as well (test
	// builds only, BOX_UNSAFE_OFF=resolver-tcp): pasta sends it to the real 169.254.1.1.
	UnsafeResolverTCP bool
	// Blocked are the ranges rejected besides the host's own (nil: Blocked, the policy
	// catalogue; a test build's BOX_UNSAFE_OFF=special-ranges passes fewer).
	Blocked []netip.Prefix
	// UnsafeLoopbackName accepts loopback by its name, "lo", instead of its index (test
	// builds only, BOX_UNSAFE_OFF=loopback-index): an uplink renamed "lo" then passes.
	UnsafeLoopbackName bool
}

// LoopbackIndex is lo's interface index in every network namespace (the kernel's
// LOOPBACK_IFINDEX): lo is registered first and can be renamed but never removed, and no
// other interface can take its index. The filters accept loopback by it: a name is the
// namespace owner's to change, and an uplink renamed "lo" would pass for loopback.
const LoopbackIndex = 1

// Resolve returns opts with a concrete Helper and the programs' paths, or an error that
// says what is missing. Attach resolves by itself; call Resolve before launching bwrap to
// learn which helper (and so which resolv.conf) the sandbox will get.
func (o Options) Resolve() (Options, error) {
	if o.Helper == Auto {
		o.Helper = Slirp4netns
		if _, err := exec.LookPath(string(Pasta)); err == nil {
			o.Helper = Pasta
		} else if _, err := exec.LookPath(string(Slirp4netns)); err != nil {
			return o, errors.New("internet tier: neither pasta nor slirp4netns is installed")
		}
	}
	if o.Helper != Pasta && o.Helper != Slirp4netns {
		return o, fmt.Errorf("internet tier: unknown network helper %q (want pasta or slirp4netns)", o.Helper)
	}
	if o.HelperPath == "" {
		p, err := exec.LookPath(string(o.Helper))
		if err != nil {
			return o, fmt.Errorf("internet tier: %s: %w (hint: install %s)", o.Helper, err, pkgOf(o.Helper))
		}
		o.HelperPath = p
	}
	if o.NsenterPath == "" {
		p, err := exec.LookPath("nsenter")
		if err != nil {
			return o, fmt.Errorf("internet tier: nsenter: %w (hint: install util-linux)", err)
		}
		o.NsenterPath = p
	}
	return o, nil
}

func pkgOf(h Helper) string {
	if h == Pasta {
		return "passt"
	}
	return string(h)
}

// ResolverAddr is the DNS server address the sandbox uses with helper h (invalid for
// Auto: resolve the options first).
func ResolverAddr(h Helper) netip.Addr {
	switch h {
	case Pasta:
		return PastaResolver
	case Slirp4netns:
		return SlirpResolver
	}
	return netip.Addr{}
}

// ResolvConf is the /etc/resolv.conf the sandbox must see with helper h.
func ResolvConf(h Helper) string {
	r := ResolverAddr(h)
	if !r.IsValid() {
		return ""
	}
	return "nameserver " + r.String() + "\n"
}
