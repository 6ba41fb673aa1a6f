package host

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file reads the facts the planners need from the machine (this process's network
// namespace). It only reads.

// PublicResolvers are the boxes' upstream resolvers when the host names none usable.
var PublicResolvers = []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("9.9.9.9")}

// HostResolvers returns the host's upstream IPv4 resolvers: systemd-resolved's upstream
// list when present, else /etc/resolv.conf; loopback stubs are skipped (dnsmasq on the
// bridge cannot use the host's 127.0.0.53). Empty when none is usable.
func HostResolvers() []netip.Addr {
	for _, f := range []string{"/run/systemd/resolve/resolv.conf", "/etc/resolv.conf"} {
		if rs := resolvConf(f); len(rs) > 0 {
			return rs
		}
	}
	return nil
}

func resolvConf(path string) []netip.Addr {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 || fs[0] != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(fs[1]); err == nil && a.Is4() && !a.IsLoopback() && !a.IsUnspecified() {
			out = append(out, a)
		}
	}
	return out
}

// Claims lists the IPv4 ranges already in use here, excluding the box bridge's own: every
// route but the default one (by its destination), the default gateway (as a host
// address), and every interface's subnet. Incus networks that are down have no route;
// the caller adds them (NetworkClaims).
func Claims(bridge string) ([]Claim, error) {
	var out []Claim
	routes, err := readRoutes("/proc/net/route")
	if err != nil {
		return nil, err
	}
	for _, r := range routes {
		if r.dev == bridge {
			continue
		}
		if r.dst.Bits() == 0 {
			if r.gw.IsValid() && !r.gw.IsUnspecified() {
				out = append(out, Claim{netip.PrefixFrom(r.gw, 32), fmt.Sprintf("the default gateway %s (dev %s)", r.gw, r.dev)})
			}
			continue
		}
		out = append(out, Claim{r.dst, fmt.Sprintf("route %s dev %s", r.dst, r.dev)})
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for _, ifc := range ifs {
		if ifc.Name == bridge || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if p, ok := ipnetPrefix(n); ok && p.Addr().Is4() {
					out = append(out, Claim{p.Masked(), fmt.Sprintf("interface %s (%s)", ifc.Name, p)})
				}
			}
		}
	}
	return out, nil
}

func ipnetPrefix(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

type routeEntry struct {
	dev string
	dst netip.Prefix
	gw  netip.Addr
}

// readRoutes parses /proc/net/route (IPv4 main table; addresses little-endian hex).
func readRoutes(path string) ([]routeEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read routes: %w", err)
	}
	defer f.Close()
	var out []routeEntry
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		dst, ok1 := hexAddr(fs[1])
		gw, ok2 := hexAddr(fs[2])
		mask, ok3 := hexAddr(fs[7])
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		m := mask.As4()
		bits := 0
		for _, b := range m {
			for b&0x80 != 0 {
				bits++
				b <<= 1
			}
		}
		out = append(out, routeEntry{dev: fs[0], dst: netip.PrefixFrom(dst, bits).Masked(), gw: gw})
	}
	return out, sc.Err()
}

func hexAddr(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return netip.Addr{}, false
	}
	var a [4]byte
	binary.LittleEndian.PutUint32(a[:], binary.BigEndian.Uint32(b))
	return netip.AddrFrom4(a), true
}

// BridgePorts maps each bridge of this network namespace to its ports (from sysfs, which
// must be the namespace's own), for Overreach.
func BridgePorts() map[string][]string {
	out := map[string][]string{}
	brs, _ := filepath.Glob("/sys/class/net/*/brif")
	for _, d := range brs {
		br := filepath.Base(filepath.Dir(d))
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			out[br] = append(out[br], e.Name())
		}
		slices.Sort(out[br])
	}
	return out
}
