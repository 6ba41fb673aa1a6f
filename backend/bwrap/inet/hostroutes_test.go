package inet

import (
	"errors"
	"net/netip"
	"os/exec"
	"slices"
	"testing"

	"github.com/heavy-duty/box/drill/lab"
)

// HostRoutes reads a real kernel's routes, every table: the prefixes of a network of the
// host's own (a split-tunnel VPN's public prefix, in the main table and in a policy
// table) come back; the default route, a full-tunnel VPN's /1 halves, a blocked range and
// the interfaces' own subnets (the kernel's routes, HostNets' to reject) do not.
func TestHostRoutesReadsTheKernel(t *testing.T) {
	name, _ := scratchNetns(t)
	for _, args := range [][]string{
		{"link", "add", "vpn0", "type", "veth", "peer", "name", "vpn1"},
		{"link", "set", "vpn0", "up"},
		{"link", "set", "vpn1", "up"},
		{"addr", "add", "10.99.0.2/24", "dev", "vpn0"},
		{"addr", "add", "198.51.100.2/24", "dev", "vpn1"}, // the kernel's route: HostNets
		{"route", "add", "default", "via", "10.99.0.1"},
		{"route", "add", "0.0.0.0/1", "via", "10.99.0.1"},
		{"route", "add", "128.0.0.0/1", "via", "10.99.0.1"},
		{"route", "add", "192.0.2.0/24", "via", "10.99.0.1"},
		{"route", "add", "172.16.0.0/12", "via", "10.99.0.1"},
		{"route", "add", "203.0.113.0/25", "dev", "vpn0", "table", "51820"},
		{"route", "add", "default", "dev", "vpn0", "table", "51820"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var got []netip.Prefix
	err := lab.InNetns("/run/netns/"+name, func() (err error) {
		got, err = HostRoutes()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("203.0.113.0/25")}
	if !slices.Equal(got, want) {
		t.Errorf("HostRoutes() = %v, want %v", got, want)
	}
}

// More own routes than the filter rejects one by one: refused whole, never in part.
func TestHostRoutesCapped(t *testing.T) {
	var ps []netip.Prefix
	for i := range MaxHostRoutes + 1 {
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{11, byte(i >> 8), byte(i), 0}), 24))
	}
	if _, err := capRoutes(ps[:MaxHostRoutes]); err != nil {
		t.Fatalf("%d routes: %v", MaxHostRoutes, err)
	}
	_, err := capRoutes(ps)
	var e *HostRoutesError
	if !errors.As(err, &e) || e.Count != MaxHostRoutes+1 {
		t.Fatalf("%d routes: %v, want HostRoutesError", len(ps), err)
	}
}
