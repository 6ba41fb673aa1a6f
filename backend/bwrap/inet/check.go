package inet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// HostAddrs returns every address configured on the host's interfaces (this process's
// network namespace) at the time of the call, sorted. The sandbox reaches the host's
// services through any of them, so the filter rejects them all.
func HostAddrs() ([]netip.Addr, error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list host addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range ifAddrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), nil
}

// HostNets returns the IPv4 subnets of the host's interfaces (this process's network
// namespace) at the time of the call, masked, sorted and unique: the host's LAN however it
// is numbered. A LAN in public address space (a campus, a hosting provider's shared
// subnet, a cloud network of public addresses) is outside every private range, so the
// tiers reject these subnets as well as the ranges (review finding, session 10: the
// internet tier reached a neighbour at 198.51.100.10 on the host's 198.51.100.0/24).
func HostNets() ([]netip.Prefix, error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list host subnets: %w", err)
	}
	var out []netip.Prefix
	for _, a := range ifAddrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		ones, bits := n.Mask.Size()
		if !ok || bits == 0 {
			continue
		}
		ip = ip.Unmap()
		if !ip.Is4() {
			continue
		}
		if bits == 128 { // an IPv4 address with a 16-byte mask
			ones -= 96
		}
		if p, err := ip.Prefix(ones); err == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, comparePrefix)
	return slices.Compact(out), nil
}

// MaxHostRoutes bounds the host's own routed prefixes outside the blocked ranges that
// the tiers reject, one filter rule each: a host with more (a router holding a full
// table) is refused with HostRoutesError, never filtered in part.
const MaxHostRoutes = 512

// HostRoutesError: the host routes more prefixes to networks of its own, outside the
// blocked ranges, than MaxHostRoutes.
type HostRoutesError struct{ Count int }

func (e *HostRoutesError) Error() string {
	return fmt.Sprintf("the host routes %d prefixes outside the blocked ranges to networks of its own, more than the %d the tier rejects", e.Count, MaxHostRoutes)
}

// HostRoutes returns the IPv4 prefixes the host (this process's network namespace) routes
// to networks of its own (policy.OwnNetworkRoute), in every routing table, outside the
// blocked ranges, at the time of the call: a VPN's, a static route's (not the kernel's
// routes to the interfaces' own subnets: HostNets). They are no subnet
// of the host's interfaces, so HostNets misses them, and a split-tunnel VPN's may lie in
// public address space (review finding, session 13: both tiers reached 192.0.2.10 behind
// the lab host's vpn0).
func HostRoutes() ([]netip.Prefix, error) {
	rib, err := syscall.NetlinkRIB(unix.RTM_GETROUTE, unix.AF_INET)
	if err != nil {
		return nil, fmt.Errorf("list host routes: %w", err)
	}
	return hostRoutes(rib, Blocked)
}

// hostRoutes is HostRoutes on a route dump (RTM_NEWROUTE messages). Pure.
func hostRoutes(rib []byte, blocked []netip.Prefix) ([]netip.Prefix, error) {
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, fmt.Errorf("list host routes: %w", err)
	}
	var out []netip.Prefix
	for i := range msgs {
		m := &msgs[i]
		switch m.Header.Type {
		case unix.NLMSG_DONE:
			return capRoutes(out)
		case unix.NLMSG_ERROR:
			return nil, errors.New("list host routes: the kernel answered an error")
		case unix.RTM_NEWROUTE:
		default:
			continue
		}
		// struct rtmsg: family, dst_len, src_len, tos, table, protocol, ... The kernel's
		// own routes (an interface's subnet, the host's addresses) are HostNets' and
		// HostAddrs': left to them, so each rule has one place and one switch.
		if len(m.Data) < unix.SizeofRtMsg || m.Data[0] != unix.AF_INET || m.Data[5] == unix.RTPROT_KERNEL {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(m)
		if err != nil {
			return nil, fmt.Errorf("list host routes: %w", err)
		}
		dst := netip.IPv4Unspecified()
		for _, a := range attrs {
			if a.Attr.Type == unix.RTA_DST && len(a.Value) == 4 {
				dst = netip.AddrFrom4([4]byte(a.Value))
			}
		}
		p, err := dst.Prefix(int(m.Data[1]))
		if err != nil {
			return nil, fmt.Errorf("list host routes: a route to %v/%d: %w", dst, m.Data[1], err)
		}
		inside := slices.ContainsFunc(blocked, func(b netip.Prefix) bool { return b.Bits() <= p.Bits() && b.Contains(p.Addr()) })
		if policy.OwnNetworkRoute(p) && !inside {
			out = append(out, p)
		}
	}
	return capRoutes(out)
}

func capRoutes(out []netip.Prefix) ([]netip.Prefix, error) {
	slices.SortFunc(out, comparePrefix)
	out = slices.Compact(out)
	if len(out) > MaxHostRoutes {
		return nil, &HostRoutesError{Count: len(out)}
	}
	return out, nil
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// Problem is one reason the internet tier cannot run here, with its fix.
type Problem struct {
	What string // what was checked
	Err  error
	Fix  string
}

func (p Problem) Error() string { return p.What + ": " + p.Err.Error() }

// Check reports why the internet tier cannot run on this machine for this user (empty:
// it can), for `box --check`. It runs the filter helper for real in a throwaway user and
// network namespace, so it also proves the FilterSubcommand wiring.
func Check(opts Options) []Problem {
	var ps []Problem
	add := func(what string, err error, fix string) { ps = append(ps, Problem{what, err, fix}) }

	resolved, err := opts.Resolve()
	switch {
	case err != nil && opts.Helper == Auto:
		add("network helper", err, "install passt (pasta), or slirp4netns")
	case err != nil:
		add("network helper", err, "install "+pkgOf(opts.Helper)+", or choose the other helper")
	}
	if _, err := exec.LookPath("nsenter"); opts.NsenterPath == "" && err != nil {
		add("nsenter", err, "install util-linux")
	}
	if err := checkTun(); err != nil {
		fix := "as root: chmod 0666 /dev/net/tun (it is 0666 on most desktops)"
		if errors.Is(err, os.ErrNotExist) {
			fix = "as root: modprobe tun (the kernel needs CONFIG_TUN)"
		}
		add("/dev/net/tun", err, fix)
	}
	if resolved.Helper == Slirp4netns {
		if r, ok := hostResolver(); ok && r.IsLoopback() {
			add("DNS with slirp4netns", fmt.Errorf("the host resolver %v is on loopback, which --disable-host-loopback forbids", r),
				"install passt (pasta), which can forward DNS to a loopback resolver")
		}
	}
	if err := checkFilter(opts); err != nil {
		add("egress filter", err, "user namespaces and nftables in them must be available; the box binary must dispatch "+FilterSubcommand+" to inet.FilterMain")
	}
	return ps
}

// CheckAllowlist reports why the allowlist tier cannot run here (nil: it can). It runs
// the real setup (route, nat and filter table, the two sockets handed over) in a
// throwaway user and network namespace.
func CheckAllowlist(filterCommand []string) error {
	js, err := json.Marshal(AllowPlan())
	if err != nil {
		return err
	}
	mine, theirs, err := socketpair()
	if err != nil {
		return err
	}
	defer mine.Close()
	err = runInScratchNetns(filterCommand, []string{"-allowlist"}, js, theirs)
	theirs.Close()
	if err != nil {
		return err
	}
	ln, pc, err := receiveSockets(mine)
	if err != nil {
		return err
	}
	ln.Close()
	pc.Close()
	return nil
}

func checkTun() error {
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// hostResolver is the first nameserver of /etc/resolv.conf, the one helpers forward to.
func hostResolver() (netip.Addr, bool) {
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return netip.Addr{}, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) >= 2 && f[0] == "nameserver" {
			a, err := netip.ParseAddr(f[1])
			return a, err == nil
		}
	}
	return netip.Addr{}, false
}

// checkFilter runs the filter helper as root of a fresh user namespace with its own
// netns (as bwrap's outer namespace is), installing the real plan.
func checkFilter(opts Options) error {
	js, err := json.Marshal(Plan(opts))
	if err != nil {
		return err
	}
	return runInScratchNetns(opts.FilterCommand, nil, js, nil)
}

// runInScratchNetns runs the filter helper (filterCommand, or this binary) with args as
// root of a fresh user namespace with its own netns, refusing box's own netns; handoff,
// when set, is its fd 6 (fdHandoff).
func runInScratchNetns(filterCommand, args []string, stdin []byte, handoff *os.File) error {
	var own unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		return err
	}
	argv := filterCommand
	extra := []*os.File{nil, nil, nil}
	if len(argv) == 0 {
		exe, err := os.Open("/proc/self/exe")
		if err != nil {
			return err
		}
		defer exe.Close()
		// The child is not nsentered: its fds start at 3.
		extra[0] = exe
		argv = []string{"/proc/self/fd/3", FilterSubcommand}
	}
	if handoff != nil {
		extra = append(extra, handoff)
	}
	cmd := exec.Command(argv[0], append(append(argv[1:], "-not-netns-ino="+strconv.FormatUint(own.Ino, 10)), args...)...)
	cmd.ExtraFiles = extra
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
