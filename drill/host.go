package drill

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/inet"
)

// setuidCandidates are setuid-root binaries Debian and most distributions ship; the
// first one present (and really setuid root) is the setuid probe's target.
var setuidCandidates = []string{"/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount", "/usr/bin/newgrp", "/usr/bin/chsh", "/usr/bin/gpasswd", "/usr/bin/sudo", "/bin/su"}

// Gather collects the host facts BuildPlan needs. It runs outside the sandbox, as the
// operator, in the operator's network namespace. It only reads.
func Gather(home string, uid int, environ []string) Facts {
	f := Facts{Exists: map[string]bool{}}
	for _, p := range Candidates(home, uid, environ) {
		if _, err := os.Lstat(p); err == nil {
			f.Exists[p] = true
		}
	}
	f.Abstract = abstractSockets("/proc/net/unix")
	f.Gateways = gateways("/proc/net/route")
	f.Neighbors = neighbors("/proc/net/arp")
	if routes, err := inet.HostRoutes(); err == nil {
		f.Routed = routedTargets(routes)
	}
	if addrs, err := inet.HostAddrs(); err == nil {
		f.Addrs = addrs
	}
	f.Listening = listening(f.Addrs, "/proc/net/tcp", "/proc/net/tcp6")
	for _, c := range setuidCandidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode()&os.ModeSetuid != 0 && fileUID(fi) == 0 {
			f.Setuid = c
			break
		}
	}
	if g, err := exec.LookPath("git"); err == nil {
		f.Git = g
	}
	if b, err := os.ReadFile("/proc/self/cmdline"); err == nil {
		f.OuterCmdline = cmdline(b)
	}
	f.Sockets = HostSockets()
	f.SessionKeyring = SessionKeyring()
	f.UserKeyring = UserKeyring()
	return f
}

func cmdline(b []byte) string {
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// abstractSockets lists the names of listening abstract stream and seqpacket sockets
// (without the @) in a /proc/net/unix file. Names holding NUL bytes (shown as @ too) are
// listed as shown; a probe of them cannot connect and proves nothing about them.
func abstractSockets(path string) []string {
	var out []string
	eachLine(path, func(fs []string) {
		// Num RefCount Protocol Flags Type St Inode Path
		if len(fs) < 8 || !strings.HasPrefix(fs[7], "@") {
			return
		}
		flags, err1 := strconv.ParseUint(fs[3], 16, 32)
		typ, err2 := strconv.ParseUint(fs[4], 16, 16)
		if err1 != nil || err2 != nil || flags&0x10000 == 0 || (typ != 1 && typ != 5) {
			return // not listening (__SO_ACCEPTCON), or datagram
		}
		name := strings.TrimPrefix(strings.Join(fs[7:], " "), "@")
		if typ == 5 {
			name = "seqpacket:" + name
		}
		out = append(out, name)
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// gateways lists the default routes' gateways in a /proc/net/route file.
func gateways(path string) []netip.Addr {
	var out []netip.Addr
	eachLine(path, func(fs []string) {
		// Iface Destination Gateway Flags ...
		if len(fs) < 4 || fs[1] != "00000000" {
			return
		}
		if a, ok := hexAddr4(fs[2]); ok && !a.IsUnspecified() {
			out = append(out, a)
		}
	})
	return out
}

// routedTargets are the first host address of each prefix the host routes to a network
// of its own (inet.HostRoutes: a VPN's), where a router or server of that network
// usually answers.
func routedTargets(routes []netip.Prefix) []netip.Addr {
	var out []netip.Addr
	for _, p := range routes {
		a := p.Masked().Addr()
		if p.Bits() < 31 {
			a = a.Next()
		}
		out = append(out, a)
	}
	return out
}

// neighbors lists the complete entries of a /proc/net/arp file.
func neighbors(path string) []netip.Addr {
	var out []netip.Addr
	eachLine(path, func(fs []string) {
		// IP address, HW type, Flags, HW address, Mask, Device
		if len(fs) < 3 || fs[2] == "0x0" {
			return
		}
		if a, err := netip.ParseAddr(fs[0]); err == nil {
			out = append(out, a)
		}
	})
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// listening lists the TCP ports listening on a wildcard address or on one of addrs
// (loopback-only services are not reachable from outside the host: left out).
func listening(addrs []netip.Addr, files ...string) []int {
	var out []int
	for _, file := range files {
		eachLine(file, func(fs []string) {
			// sl local_address rem_address st ...
			if len(fs) < 4 || fs[3] != "0A" {
				return
			}
			host, port, ok := strings.Cut(fs[1], ":")
			if !ok {
				return
			}
			a, ok := hexAddr(host)
			if !ok || !(a.IsUnspecified() || slices.Contains(addrs, a.Unmap())) || a.Unmap().IsLoopback() {
				return
			}
			if n, err := strconv.ParseUint(port, 16, 16); err == nil {
				out = append(out, int(n))
			}
		})
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hexAddr decodes /proc/net's address notation: 32-bit words in host (little-endian) order.
func hexAddr(s string) (netip.Addr, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.LittleEndian.Uint32(b[i:]))
	}
	a, ok := netip.AddrFromSlice(b)
	return a, ok
}

func hexAddr4(s string) (netip.Addr, bool) {
	if len(s) != 8 {
		return netip.Addr{}, false
	}
	return hexAddr(s)
}

// eachLine calls fn with the fields of every line of path but the header.
func eachLine(path string, fn func([]string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		fn(strings.Fields(sc.Text()))
	}
}
