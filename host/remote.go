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
// Incus lists physical interfaces, not veths), for the ACL's host-address drops and the
// subnets they claim.
func RemoteFacts(ctx context.Context, c *incus.Client, bridge string) ([]netip.Addr, []Claim, error) {
	ns, err := c.Networks(ctx)
	if err != nil {
		return nil, nil, err
	}
	var addrs []netip.Addr
	var claims []Claim
	srv, err := c.Server(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, hp := range srv.Environment.Addresses {
		if ap, err := netip.ParseAddrPort(hp); err == nil {
			addrs = append(addrs, ap.Addr())
		}
	}
	for _, n := range ns {
		if n.Managed || n.Name == bridge {
			continue
		}
		as, err := c.NetworkAddresses(ctx, n.Name)
		if err != nil {
			return nil, nil, err
		}
		for _, a := range as {
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				continue
			}
			addrs = append(addrs, ip)
			bits, err := strconv.Atoi(a.Netmask)
			if err != nil || !ip.Is4() || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
				continue
			}
			if p, err := ip.Prefix(bits); err == nil {
				claims = append(claims, Claim{p, fmt.Sprintf("the remote's interface %s (%s/%d)", n.Name, ip, bits)})
			}
		}
	}
	return addrs, claims, nil
}
