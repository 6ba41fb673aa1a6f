package host

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/heavy-duty/box/backend/incus"
)

// NotApplied is the outcome of a step setup-host cannot take from where it runs: the
// host firewall and its boot unit of a remote live on that host.
const NotApplied Outcome = "not applied here"

// RemoteFirewallFix is what a remote's host needs for the part of the stack only it
// can apply: its own nftables tables and boot unit.
func RemoteFirewallFix(remote string) string {
	return fmt.Sprintf("the host firewall is nftables on %s's own host: run 'box setup-host' there as root (it finds the stack built and adds the firewall and boot unit); 'box doctor' there checks them", remote)
}

// RemoteFacts reads through the API what setup-host otherwise reads of this machine:
// the remote host's addresses (where it listens, and its unmanaged networks' state:
// Incus lists physical interfaces, not veths) and those networks' subnets, for the
// ACL's host-address and host-subnet drops, and the subnets they claim.
func RemoteFacts(ctx context.Context, c *incus.Client, bridge string) (HostFacts, []Claim, error) {
	var f HostFacts
	ns, err := c.Networks(ctx)
	if err != nil {
		return f, nil, err
	}
	var claims []Claim
	srv, err := c.Server(ctx)
	if err != nil {
		return f, nil, err
	}
	for _, hp := range srv.Environment.Addresses {
		if ap, err := netip.ParseAddrPort(hp); err == nil {
			f.Addrs = append(f.Addrs, ap.Addr())
		}
	}
	for _, n := range ns {
		if n.Managed || n.Name == bridge {
			continue
		}
		as, err := c.NetworkAddresses(ctx, n.Name)
		if err != nil {
			return f, nil, err
		}
		for _, a := range as {
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			f.Addrs = append(f.Addrs, ip)
			if !ip.Is4() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
				continue
			}
			// An unreadable netmask would leave that LAN out of the ACL: said, not skipped.
			bits, err := strconv.Atoi(a.Netmask)
			p, perr := ip.Prefix(bits)
			if err != nil || perr != nil {
				return f, nil, fmt.Errorf("the remote's interface %s: address %s has netmask %q, not a prefix length", n.Name, ip, a.Netmask)
			}
			claims = append(claims, Claim{p, fmt.Sprintf("the remote's interface %s (%s/%d)", n.Name, ip, bits)})
			f.Nets = append(f.Nets, HostNet{Prefix: netip.PrefixFrom(ip, bits), Iface: n.Name})
		}
	}
	return f, claims, nil
}
