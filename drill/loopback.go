package drill

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// KindLoopbackRename: at tier internet, the inside renames its loopback away and its
// uplink (pasta's or slirp4netns's tap) to "lo" over rtnetlink, puts the default route
// back, and dials the LAN targets: one reached = seen. A filter that accepts loopback by
// name passes everything that leaves by the renamed uplink (session 11, through box's
// lent CAP_NET_ADMIN). Two things hold it: the renames are EPERM (the command holds no
// capability there and box lends none), and the filter takes loopback by its index.
const KindLoopbackRename Kind = "loopback-rename"

// loopbackRenameProbe is the network group's row for it (tier internet only: at tier
// full the namespace is the host's, and the probe would rename the host's interfaces).
func loopbackRenameProbe(targets []string, want Want, expected string) Probe {
	pr := Probe{ID: "net:loopback-rename", Group: "network", Name: "rename the uplink to lo, then the LAN",
		Kind: KindLoopbackRename, Targets: targets, Want: want, Expected: expected}
	if len(targets) == 0 {
		pr.Skip = "no LAN target known (name one: --lan ADDR:PORT)"
	}
	return pr
}

// probeLoopbackRename makes the renames and the route, dials, and puts every name back.
// An attacker tries again when a link vanished under it (ENODEV: seen under load in CI,
// on the old code too, while the tier's helper set the namespace up); so does the probe,
// a few times, reading the uplink afresh.
func (r *runner) probeLoopbackRename(targets []string) (bool, string, error) {
	for try := 1; ; try++ {
		seen, detail, err := r.loopbackRenameOnce(targets)
		if try == 3 || err != nil || detail != "refused: "+unix.ErrnoName(unix.ENODEV) {
			return seen, detail, err
		}
	}
}

func (r *runner) loopbackRenameOnce(targets []string) (bool, string, error) {
	up, gw, err := uplinkAndGateway()
	if err != nil {
		return false, "", err
	}
	if up == nil {
		return false, "no uplink with a default route", nil
	}
	const away = "lo-drill"
	steps := []struct {
		index int
		flags uint32 // 0 down, unix.IFF_UP up, else none
		name  string
	}{
		{loopbackIndex, 1, ""}, {loopbackIndex, 0, away},
		{up.Index, 1, ""}, {up.Index, 0, "lo"},
		{loopbackIndex, 2, ""}, {up.Index, 2, ""},
	}
	undo := []struct {
		index int
		flags uint32
		name  string
	}{
		{up.Index, 1, ""}, {up.Index, 0, up.Name}, {loopbackIndex, 1, ""}, {loopbackIndex, 0, "lo"},
		{loopbackIndex, 2, ""}, {up.Index, 2, ""},
	}
	defer func() {
		for _, s := range undo {
			setLink(s.index, s.flags, s.name)
		}
		addDefaultRoute(up.Index, gw)
	}()
	for _, s := range steps {
		errno, err := setLink(s.index, s.flags, s.name)
		if err != nil {
			return false, "", err
		}
		if errno != 0 {
			return false, "refused: " + unix.ErrnoName(errno), nil
		}
	}
	if errno, err := addDefaultRoute(up.Index, gw); err != nil || errno != 0 {
		return false, fmt.Sprintf("renamed, but the default route did not come back (%v %v)", errno, err), nil
	}
	seen, detail := r.probeTCP(targets)
	return seen, "renamed the uplink lo; " + detail, nil
}

// uplinkAndGateway finds the interface the default route leaves by, and its gateway.
func uplinkAndGateway() (*net.Interface, netip.Addr, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, netip.Addr{}, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) < 3 || fl[1] != "00000000" {
			continue
		}
		g, err := strconv.ParseUint(fl[2], 16, 32)
		if err != nil {
			return nil, netip.Addr{}, fmt.Errorf("/proc/net/route gateway %q: %w", fl[2], err)
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(g)) // the kernel's order, printed as a host-endian word
		ifi, err := net.InterfaceByName(fl[0])
		if err != nil {
			return nil, netip.Addr{}, err
		}
		return ifi, netip.AddrFrom4(b), nil
	}
	return nil, netip.Addr{}, s.Err()
}

// setLink sends RTM_NEWLINK for index: flags 0 takes it down, 1 too (before a rename),
// 2 brings it up; a name renames it (with flags 0, nothing else changes).
func setLink(index int, flags uint32, name string) (syscall.Errno, error) {
	var attrs []byte
	var ifFlags, change uint32
	switch {
	case name != "":
		attrs = rtattr(unix.IFLA_IFNAME, append([]byte(name), 0))
	case flags == 2:
		ifFlags, change = unix.IFF_UP, unix.IFF_UP
	default:
		change = unix.IFF_UP
	}
	body := make([]byte, unix.SizeofIfInfomsg)
	body[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(body[4:], uint32(index))
	binary.NativeEndian.PutUint32(body[8:], ifFlags)
	binary.NativeEndian.PutUint32(body[12:], change)
	return rtnetlink(unix.RTM_NEWLINK, 0, append(body, attrs...))
}

// addDefaultRoute sends RTM_NEWROUTE: default via gw on index (replacing any).
func addDefaultRoute(index int, gw netip.Addr) (syscall.Errno, error) {
	body := make([]byte, unix.SizeofRtMsg)
	body[0] = unix.AF_INET
	body[4] = unix.RT_TABLE_MAIN
	body[5] = unix.RTPROT_BOOT
	body[6] = unix.RT_SCOPE_UNIVERSE
	body[7] = unix.RTN_UNICAST
	g := gw.As4()
	oif := binary.NativeEndian.AppendUint32(nil, uint32(index))
	body = append(append(body, rtattr(unix.RTA_GATEWAY, g[:])...), rtattr(unix.RTA_OIF, oif)...)
	return rtnetlink(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, body)
}

func rtattr(typ uint16, data []byte) []byte {
	n := 4 + len(data)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], data)
	return b
}
