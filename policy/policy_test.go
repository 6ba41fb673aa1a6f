package policy

import (
	"net/netip"
	"slices"
	"testing"
)

func TestPrivateRangesAreBlocked(t *testing.T) {
	for _, p := range PrivateRanges {
		found := false
		for _, b := range Blocked {
			if b == p {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is a private range but not in Blocked", p)
		}
		if !IsBlocked(p.Addr()) {
			t.Errorf("IsBlocked(%s) = false", p.Addr())
		}
	}
	for _, s := range []string{"192.0.0.8", "198.18.0.1", "198.19.255.254", "255.255.255.255", "0.0.0.0"} {
		if !IsBlocked(netip.MustParseAddr(s)) {
			t.Errorf("IsBlocked(%s) = false", s)
		}
	}
	if !slices.IsSortedFunc(Blocked, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) }) {
		t.Errorf("the catalogue is not sorted by address: %v", Blocked)
	}
	for _, s := range []string{"203.0.113.10", "1.1.1.1"} {
		if IsBlocked(netip.MustParseAddr(s)) {
			t.Errorf("IsBlocked(%s) = true, want a public address open", s)
		}
	}
	// IPv6 is blocked whole: the registry's special ranges with it (ULA, link-local,
	// multicast, NAT64 to a private IPv4, 6to4 embedding one, v4-mapped, discard-only).
	for _, s := range []string{"::1", "fe80::1", "2001:db8::1", "::ffff:192.168.1.1", "fc00::1", "fd00::1", "ff02::1",
		"64:ff9b::c0a8:101", "64:ff9b:1::a00:1", "2002:c0a8:101::1", "100::1", "::ffff:198.18.0.1", "::"} {
		if !IsBlocked(netip.MustParseAddr(s)) {
			t.Errorf("IsBlocked(%s) = false", s)
		}
	}
}

func TestSecretAt(t *testing.T) {
	home := "/home/u"
	for _, s := range Secrets {
		for _, rel := range s.Paths {
			p := Abs(home, rel)
			if got := SecretAt(p, home); got != s.What {
				t.Errorf("SecretAt(%s) = %q, want %q", p, got, s.What)
			}
			if got := SecretAt(p+"/x", home); got == "" {
				t.Errorf("SecretAt(%s/x) = \"\", want it named", p)
			}
		}
	}
	for p, want := range map[string]bool{"/home/u": true, "/home/u/.config": true, "/home/u/src/app": false, "/run/user/1000": true, "/srv/x.sock": true} {
		if got := SecretAt(p, home) != ""; got != want {
			t.Errorf("SecretAt(%s) named = %v, want %v", p, got, want)
		}
	}
}

// The default route and a full-tunnel VPN's /1 halves lead to the internet; any longer
// route to a network of the host's own, public numbering or not.
func TestOwnNetworkRoute(t *testing.T) {
	for p, want := range map[string]bool{
		"0.0.0.0/0": false, "0.0.0.0/1": false, "128.0.0.0/1": false,
		"64.0.0.0/2": true, "192.0.2.0/24": true, "203.0.113.7/32": true, "10.0.0.0/8": true,
	} {
		if got := OwnNetworkRoute(netip.MustParsePrefix(p)); got != want {
			t.Errorf("OwnNetworkRoute(%s) = %v, want %v", p, got, want)
		}
	}
	if OwnNetworkRoute(netip.Prefix{}) {
		t.Error("the zero prefix is a route")
	}
}
