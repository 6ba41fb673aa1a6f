package lab

import (
	"context"
	"fmt"
	"net/netip"
)

// A VPN of the host's (AddVPN): a link of its own (vpn0, 10.99.0.2/30) to the LAN host,
// and a route through it to a prefix in public address space, 192.0.2.0/24, where the LAN
// host answers VPNBody on VPNAddr, the prefix's first address (where the drill looks). It is what a split-tunnel WireGuard or OpenVPN to a
// company network looks like: the prefix is in no blocked range and is not a subnet of
// any of the host's interfaces; only the host's routing table says it is not the
// internet. VPNName is an internet name whose DNS answer is VPNAddr (web.go).
var (
	VPNAddr   = netip.MustParseAddr("192.0.2.1")
	VPNPrefix = netip.MustParsePrefix("192.0.2.0/24")
	vpnHost   = netip.MustParsePrefix("10.99.0.2/30")
	vpnPeer   = netip.MustParsePrefix("10.99.0.1/30")
)

const (
	VPNName = "vpn.test"
	VPNBody = "boxlab: VPN SECRET\n"
)

// AddVPN gives the lab's host the VPN above. Without it nothing answers on VPNAddr.
func (l *Lab) AddVPN(ctx context.Context) error {
	h, lan := l.NSName(RoleHost), l.NSName(RoleLANHost)
	steps := [][]string{
		{"ip", "-n", lan, "link", "add", "vpn1", "type", "veth", "peer", "name", "vpn0", "netns", h},
		{"ip", "-n", lan, "addr", "add", vpnPeer.String(), "dev", "vpn1"},
		{"ip", "-n", lan, "addr", "add", VPNAddr.String() + "/32", "dev", "vpn1"},
		{"ip", "-n", lan, "link", "set", "vpn1", "up"},
		{"ip", "-n", h, "addr", "add", vpnHost.String(), "dev", "vpn0"},
		{"ip", "-n", h, "link", "set", "vpn0", "up"},
		{"ip", "-n", h, "route", "add", VPNPrefix.String(), "via", vpnPeer.Addr().String(), "dev", "vpn0"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("lab vpn: %w", err)
		}
	}
	return l.ServeHTTP(RoleLANHost, netip.AddrPortFrom(VPNAddr, HTTPPort).String(), VPNBody)
}
