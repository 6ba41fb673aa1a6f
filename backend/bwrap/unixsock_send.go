package bwrap

import (
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sends that carry an address (sendto with one, every sendmsg and sendmmsg) are never
// continued: the kernel would read the fd number and the address again at call time, and
// a racing thread could have put a unix datagram socket at that number, or rewritten the
// address, after box looked. Box sends them itself, on its pidfd_getfd copy of the socket
// object, with its own copy of the data, the address and the control bytes.

// ProtSocketSends: box makes the sandbox's address-carrying sends itself (a test build
// can switch it off, back to continuing those on a socket that is not a unix datagram
// one: the race this closes).
const ProtSocketSends = "socket-sends"

// ProtSocketZerocopy: box refuses a zero-copy send (a test build can switch it off: the
// caller's MSG_ZEROCOPY is then passed on, and the kernel sends from box's buffer after
// the call, when box has freed and reused it).
const ProtSocketZerocopy = "socket-zerocopy"

// ProtSocketNetlink: box never lends its capabilities over the sandbox's network
// namespace to a netlink send or connect it makes (a test build can switch it off).
const ProtSocketNetlink = "socket-netlink"

// netlinkName is what box sends with in place of the address a netlink send names. The
// kernel checks an rtnetlink change (an address, a route, a link's name or state)
// against the capability of the task that makes the send, box, whenever the send names
// an address (NETLINK_SKB_DST), and box's uid owns the user namespace that owns the
// sandbox's network namespace: box holds CAP_NET_ADMIN there. A sandbox's `ip link set
// lo down` went through (a hostile review's finding, session 11): renaming the
// internet tier's tap to "lo" would take its traffic past the filter's `oifname "lo"
// accept`. So the kernel's own address (port 0, no group) is dropped, and the kernel
// then checks the socket's opener, the sandbox, as for its own send; another port or a
// group (which needs CAP_NET_ADMIN for a NETLINK_ROUTE socket) is EPERM, the kernel's
// answer to the sandbox. A name the kernel refuses (too short, another family) passes
// as it is, to be refused.
func netlinkName(name []byte) ([]byte, unix.Errno) {
	if protectionOff(ProtSocketNetlink) {
		return name, 0
	}
	if len(name) < unix.SizeofSockaddrNetlink || binary.NativeEndian.Uint16(name) != unix.AF_NETLINK {
		return name, 0
	}
	if binary.NativeEndian.Uint32(name[4:]) != 0 || binary.NativeEndian.Uint32(name[8:]) != 0 {
		return nil, unix.EPERM
	}
	return nil, 0
}

const (
	// sendCopyMax bounds what box copies for one send: a datagram (or seqpacket record)
	// larger is refused with EMSGSIZE, a stream send is cut there (a short count, as a
	// signal would make it).
	sendCopyMax = 4 << 20
	// ctrlCopyMax bounds the control bytes (the kernel's own limit, optmem_max, is
	// smaller by default): more is ENOBUFS, the kernel's answer.
	ctrlCopyMax        = 256 << 10
	uioMaxIOV          = 1024 // UIO_MAXIOV
	sockaddrStorageLen = 128
	sizeofMmsghdr      = unix.SizeofMsghdr + 8
)

// outMsg is box's copy of one message.
type outMsg struct {
	name  []byte
	data  []byte
	ctrl  []byte
	fds   []int // box's copies of the SCM_RIGHTS fds, closed after the send
	after func()
}

func (m *outMsg) close() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
	if m.after != nil {
		m.after()
	}
}

// sendCall is one notification's send: the caller's memory, its pidfd and box's copy of
// its socket.
type sendCall struct {
	g      *sockGuard
	n      *seccompNotif
	tid    int
	pidfd  int
	sock   int
	domain int
	typ    int
	mem    *os.File
}

func (c *sendCall) read(addr uintptr, size int) ([]byte, unix.Errno) {
	b := make([]byte, size)
	if size == 0 {
		return b, 0
	}
	if _, err := c.mem.ReadAt(b, int64(addr)); err != nil {
		return nil, unix.EFAULT
	}
	if !c.g.valid(c.n) {
		return nil, errRefused
	}
	return b, 0
}

// send answers a sendto with an address, a sendmsg or a sendmmsg by making it.
func (g *sockGuard) send(n *seccompNotif, tid, pidfd, sock, domain, typ int) seccompResp {
	mode := os.O_RDONLY
	if n.Data.Nr == int32(unix.SYS_SENDMMSG) {
		mode = os.O_RDWR // msg_len is written back
	}
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(tid)+"/mem", mode, 0)
	if err != nil {
		return fail(errRefused)
	}
	defer mem.Close()
	c := &sendCall{g: g, n: n, tid: tid, pidfd: pidfd, sock: sock, domain: domain, typ: typ, mem: mem}
	a := n.Data.Args
	switch n.Data.Nr {
	case int32(unix.SYS_SENDTO):
		m, e := c.sendtoMsg(uintptr(a[1]), a[2], uintptr(a[4]), int64(int32(a[5])))
		if e != 0 {
			return fail(e)
		}
		defer m.close()
		return result(c.do(m, int(int32(a[3]))))
	case int32(unix.SYS_SENDMSG):
		m, e := c.msg(uintptr(a[1]))
		if e != 0 {
			return fail(e)
		}
		defer m.close()
		return result(c.do(m, int(int32(a[2]))))
	default: // sendmmsg
		return c.mmsg(uintptr(a[1]), uint32(a[2]), int(int32(a[3])))
	}
}

func (c *sendCall) sendtoMsg(buf uintptr, size uint64, addr uintptr, alen int64) (*outMsg, unix.Errno) {
	if alen < 0 || alen > sockaddrStorageLen {
		return nil, unix.EINVAL
	}
	m := &outMsg{}
	n, e := c.bound(size)
	if e != 0 {
		return nil, e
	}
	if m.data, e = c.read(buf, n); e != 0 {
		return nil, e
	}
	if alen > 0 {
		if m.name, e = c.read(addr, int(alen)); e != 0 {
			return nil, e
		}
	}
	if e := c.target(m); e != 0 {
		return nil, e
	}
	return m, 0
}

// bound is how many bytes of a send of size box copies.
func (c *sendCall) bound(size uint64) (int, unix.Errno) {
	if size <= sendCopyMax {
		return int(size), 0
	}
	if c.typ == unix.SOCK_STREAM {
		return sendCopyMax, 0
	}
	return 0, unix.EMSGSIZE
}

// msg copies the msghdr at addr: name, the data its iovecs point to, the control bytes.
func (c *sendCall) msg(addr uintptr) (*outMsg, unix.Errno) {
	raw, e := c.read(addr, unix.SizeofMsghdr)
	if e != 0 {
		return nil, e
	}
	h := (*unix.Msghdr)(unsafe.Pointer(&raw[0]))
	name := uintptr(unsafe.Pointer(h.Name))
	iov := uintptr(unsafe.Pointer(h.Iov))
	ctrl := uintptr(unsafe.Pointer(h.Control))
	m := &outMsg{}
	if nl := int64(int32(h.Namelen)); name != 0 && nl != 0 {
		if nl < 0 {
			return nil, unix.EINVAL
		}
		if m.name, e = c.read(name, int(min(nl, sockaddrStorageLen))); e != 0 {
			return nil, e
		}
	}
	if h.Iovlen > uioMaxIOV {
		return nil, unix.EMSGSIZE
	}
	if h.Iovlen > 0 {
		vs, e := c.read(iov, int(h.Iovlen)*16)
		if e != 0 {
			return nil, e
		}
		var total uint64
		for i := range int(h.Iovlen) {
			l := binary.NativeEndian.Uint64(vs[i*16+8:])
			if l > math.MaxInt64-total {
				return nil, unix.EINVAL // a negative ssize_t to the kernel
			}
			total += l
		}
		left, e := c.bound(total)
		if e != 0 {
			return nil, e
		}
		m.data = make([]byte, 0, left)
		for i := 0; i < int(h.Iovlen) && left > 0; i++ {
			base := uintptr(binary.NativeEndian.Uint64(vs[i*16:]))
			l := int(min(binary.NativeEndian.Uint64(vs[i*16+8:]), uint64(left)))
			b, e := c.read(base, l)
			if e != 0 {
				return nil, e
			}
			m.data = append(m.data, b...)
			left -= l
		}
	}
	if h.Controllen > 0 {
		if h.Controllen > ctrlCopyMax {
			return nil, unix.ENOBUFS
		}
		if m.ctrl, e = c.read(ctrl, int(h.Controllen)); e != 0 {
			return nil, e
		}
		if e := c.control(m); e != 0 {
			m.close()
			return nil, e
		}
	}
	if e := c.target(m); e != 0 {
		m.close()
		return nil, e
	}
	return m, 0
}

// control checks box's copy of the control bytes and puts box's own copies of the
// caller's SCM_RIGHTS fds in it (the kernel reads fd numbers in the sender's table:
// box's). Only control messages the kernel checks against no capability pass: box owns
// the sandbox's user namespaces, so a check against its capabilities (SO_MARK,
// SO_PRIORITY above 6, IPv6 extension headers) would grant what the caller lacks. Any
// other is refused with EPERM, as the kernel refuses a caller without the capability.
func (c *sendCall) control(m *outMsg) unix.Errno {
	b := m.ctrl
	for off := 0; off+unix.SizeofCmsghdr <= len(b); {
		l := int(binary.NativeEndian.Uint64(b[off:]))
		if l < unix.SizeofCmsghdr || l > len(b)-off {
			return unix.EINVAL // the kernel's CMSG_OK
		}
		level := int32(binary.NativeEndian.Uint32(b[off+8:]))
		typ := int32(binary.NativeEndian.Uint32(b[off+12:]))
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SCM_RIGHTS && c.domain == unix.AF_UNIX:
			for p := off + unix.SizeofCmsghdr; p+4 <= off+l; p += 4 {
				fd, err := unix.PidfdGetfd(c.pidfd, int(int32(binary.NativeEndian.Uint32(b[p:]))), 0)
				if err != nil {
					return unix.EBADF
				}
				m.fds = append(m.fds, fd)
				binary.NativeEndian.PutUint32(b[p:], uint32(fd))
			}
		case !plainControl(level, typ):
			return unix.EPERM
		}
		off += (l + 7) &^ 7
	}
	return 0
}

// plainControl: a control message the kernel checks against no capability of the sender
// (SCM_CREDENTIALS is checked against box's own pid and ids, which the sandbox cannot
// name: EPERM, as the kernel answers).
func plainControl(level, typ int32) bool {
	switch level {
	case unix.SOL_SOCKET:
		return typ == unix.SCM_CREDENTIALS || typ == unix.SO_TIMESTAMPING || typ == unix.SCM_TXTIME
	case unix.SOL_IP:
		return typ == unix.IP_PKTINFO || typ == unix.IP_TTL || typ == unix.IP_TOS
	case unix.SOL_IPV6:
		return typ == unix.IPV6_PKTINFO || typ == unix.IPV6_HOPLIMIT || typ == unix.IPV6_TCLASS || typ == unix.IPV6_DONTFRAG
	case unix.SOL_UDP:
		return typ == unix.UDP_SEGMENT
	}
	return false
}

// target applies the unix policy to the message's address: a path becomes box's
// /proc/self/fd/N of the socket file it decided on. Other families' addresses and the
// unix ones that name no file pass as box copied them.
func (c *sendCall) target(m *outMsg) unix.Errno {
	if c.domain == unix.AF_NETLINK && len(m.name) > 0 {
		name, e := netlinkName(m.name)
		if e != 0 {
			return e
		}
		m.name = name
		return 0
	}
	if c.domain != unix.AF_UNIX || len(m.name) == 0 {
		return 0
	}
	sa, fd, e := c.g.unixTarget(c.tid, m.name)
	if e != 0 {
		return e
	}
	m.name = sa
	if fd >= 0 {
		m.after = func() { unix.Close(fd) }
	}
	return 0
}

// do makes the send on box's copy of the socket. A blocking caller's send blocks (box
// sends with MSG_DONTWAIT and waits for the socket, the caller's end or box's own); a
// blocking stream send goes on until all is sent, as the kernel's does.
func (c *sendCall) do(m *outMsg, flags int) (uintptr, unix.Errno) {
	if !protectionOff(ProtSocketZerocopy) {
		// The send is made from box's copy, which box frees when the call returns. With
		// MSG_ZEROCOPY on a socket with SO_ZEROCOPY the kernel pins those pages and sends
		// from them later (past the peer's window, on a retransmission): box's heap,
		// reused by then, reached the sandbox's receiver (a hostile review's finding,
		// session 11). Where the socket asks for it, the send is refused with ENOBUFS, the
		// kernel's own answer when it cannot make a zero-copy send (a program falls back
		// to a copying one); elsewhere the kernel ignores the flag, and box drops it, so
		// another thread turning SO_ZEROCOPY on meanwhile changes nothing.
		if flags&unix.MSG_ZEROCOPY != 0 {
			if on, err := unix.GetsockoptInt(c.sock, unix.SOL_SOCKET, unix.SO_ZEROCOPY); err != nil || on != 0 {
				return 0, unix.ENOBUFS
			}
		}
		flags &^= unix.MSG_ZEROCOPY
	}
	blocking := flags&unix.MSG_DONTWAIT == 0
	if blocking {
		if fl, err := unix.FcntlInt(uintptr(c.sock), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
			blocking = false
		}
	}
	sent := 0
	spun := false
	for {
		var h unix.Msghdr
		var iov unix.Iovec
		rest := m.data[sent:]
		if len(rest) > 0 {
			iov.Base = &rest[0]
			iov.SetLen(len(rest))
			h.Iov = &iov
			h.Iovlen = 1
		}
		if len(m.name) > 0 {
			h.Name = &m.name[0]
			h.Namelen = uint32(len(m.name))
		}
		if len(m.ctrl) > 0 && sent == 0 {
			h.Control = &m.ctrl[0]
			h.SetControllen(len(m.ctrl))
		}
		r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(c.sock), uintptr(unsafe.Pointer(&h)), uintptr(flags|unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL))
		runtime.KeepAlive(m)
		if e == 0 {
			sent += int(r)
			if !blocking || c.typ != unix.SOCK_STREAM || sent >= len(m.data) {
				return uintptr(sent), 0
			}
		} else if e == unix.EPIPE && flags&unix.MSG_NOSIGNAL == 0 {
			// The kernel would have sent SIGPIPE to the caller.
			unix.Tgkill(tgidOf(c.tid), c.tid, unix.SIGPIPE)
			return partial(sent, e)
		} else if e != unix.EAGAIN || !blocking {
			return partial(sent, e)
		}
		if e == unix.EAGAIN || e == 0 && sent < len(m.data) {
			// Wait for room. A unix datagram socket sending by address reports room
			// while its peer's queue is full: then retry at intervals.
			wait := -1
			if spun {
				wait = 20
			}
			fds := []unix.PollFd{{Fd: int32(c.sock), Events: unix.POLLOUT}, {Fd: int32(c.pidfd), Events: unix.POLLIN}, {Fd: int32(c.g.stopR.Fd()), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, wait); err != nil && err != unix.EINTR {
				return partial(sent, unix.EINTR)
			}
			if fds[1].Revents != 0 || fds[2].Revents != 0 {
				return partial(sent, unix.EINTR) // the caller or box is ending
			}
			spun = fds[0].Revents&unix.POLLOUT != 0
		}
	}
}

func partial(sent int, e unix.Errno) (uintptr, unix.Errno) {
	if sent > 0 {
		return uintptr(sent), 0
	}
	return 0, e
}

// mmsg makes a sendmmsg: each message in turn, msg_len written back, the count returned
// (an error on the first one is the call's).
func (c *sendCall) mmsg(vec uintptr, vlen uint32, flags int) seccompResp {
	vlen = min(vlen, uioMaxIOV)
	count := 0
	for i := range int(vlen) {
		at := vec + uintptr(i)*sizeofMmsghdr
		m, e := c.msg(at)
		if e == 0 {
			var r uintptr
			r, e = c.do(m, flags)
			m.close()
			if e == 0 {
				var l [4]byte
				binary.NativeEndian.PutUint32(l[:], uint32(r))
				if _, err := c.mem.WriteAt(l[:], int64(at)+unix.SizeofMsghdr); err != nil {
					e = unix.EFAULT
				}
			}
		}
		if e != 0 {
			if count == 0 {
				return fail(e)
			}
			break
		}
		count++
	}
	return seccompResp{Val: int64(count)}
}
