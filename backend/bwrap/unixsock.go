package bwrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Unix sockets bound to a path belong to an inode, not to a network namespace: a server
// on ./dev.sock answers every tier. Landlock's LANDLOCK_ACCESS_FS_RESOLVE_UNIX (ABI 9,
// Linux 7.1) would refuse those bound outside the sandbox's domain, but a Landlock domain
// that handles any file access also forbids mount(2), so it cannot be put on bwrap before
// its mounts; box would need a shim of its own inside the sandbox, which is not built. On
// every kernel with seccomp user notification (5.19 for WAIT_KILLABLE_RECV) box instead
// stacks a filter of its own under bwrap's: connect, sendto with an address, sendmsg and
// sendmmsg stop in the kernel until box's supervisor (this file) answers. See docs/bwrap.md,
// "Unix sockets".

// ProtSockets mediates the sandbox's unix sockets (a test build can switch it off).
const ProtSockets = "sockets"

// UnixSockets is the plan for the sandbox's unix sockets (Spec.UnixSockets).
type UnixSockets struct {
	// Mediate installs the user-notification filter and runs the supervisor.
	Mediate bool
	// Unmediated says why not, when Mediate is false ("" when it is).
	Unmediated string
	// Allowed are the socket paths a profile named (absolute, as the sandbox sees them),
	// reachable although the host bound them.
	Allowed []string
	// HostNet: the sandbox shares the host's network namespace (tier full).
	HostNet bool
	// ScopeAbstract: abstract sockets bound outside the sandbox are refused too (box
	// connects on the sandbox's behalf, so it applies the Landlock scope's rule itself).
	ScopeAbstract bool
}

// UnixNotifySupport says whether this kernel can mediate the sandbox's unix sockets:
// seccomp user notification with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19; a
// signal must not restart a connect box already made) and pidfd_getfd (5.6). nil: yes.
func UnixNotifySupport() error {
	var sizes [3]uint16
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, seccompGetNotifSizes, 0, uintptr(unsafe.Pointer(&sizes))); e != 0 {
		return fmt.Errorf("seccomp user notification is unavailable (%v)", e)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var maj, min int
	if _, err := fmt.Sscanf(rel, "%d.%d", &maj, &min); err != nil {
		return fmt.Errorf("kernel release %q not understood", rel)
	}
	if maj < 5 || maj == 5 && min < 19 {
		return fmt.Errorf("needs Linux 5.19 or later (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV); this kernel is %s", rel)
	}
	return nil
}

// resolveSockets decides the plan's unix-socket mediation. Named paths are absolute or
// relative to the working directory; nixDaemon adds the host nix-daemon's socket.
func (p *Plan) resolveSockets(named []string, profile, wd string, hostNet, scopeAbstract, nixDaemon bool, f Facts) {
	u := UnixSockets{HostNet: hostNet, ScopeAbstract: scopeAbstract}
	for _, s := range named {
		if !filepath.IsAbs(s) {
			s = filepath.Join(wd, s)
		}
		u.Allowed = append(u.Allowed, filepath.Clean(s))
	}
	if len(u.Allowed) > 0 {
		p.warn("profile %q lets the sandbox reach the host's unix sockets %s (sockets)", profile, strings.Join(u.Allowed, ", "))
	}
	if nixDaemon {
		u.Allowed = append(u.Allowed, NixDaemonDir+"/socket")
	}
	switch {
	case f.UnixNotify != nil:
		u.Unmediated = f.UnixNotify.Error()
	case f.BwrapSetuid:
		u.Unmediated = "bwrap is setuid root here, and the filter needs no_new_privs, under which a setuid bwrap loses its privileges"
	default:
		u.Mediate = true
	}
	if !u.Mediate {
		p.warn("unix sockets: the host's path sockets the sandbox can see (a tmux or dev server on ./dev.sock, a database socket) are REACHABLE from the sandbox: %s", u.Unmediated)
	}
	p.Spec.UnixSockets = u
}

// SocketsLine is the dry run's account of the unix-socket mediation.
func (p *Plan) SocketsLine() string {
	u := p.Spec.UnixSockets
	if !u.Mediate {
		return "unix sockets: the host's path sockets are REACHABLE (not mediated: " + u.Unmediated + ")"
	}
	s := "unix sockets: only the sandbox's own (seccomp user notification, box connects on its behalf)"
	if len(u.Allowed) > 0 {
		s += "; also " + strings.Join(u.Allowed, ", ")
	}
	return s
}

// Kernel constants x/sys does not carry.
const (
	seccompGetNotifSizes     = 3          // SECCOMP_GET_NOTIF_SIZES
	seccompIoctlNotifIDValid = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID (SECCOMP_IOW(2, __u64))
	seccompRetAllow          = 0x7fff0000
	pidfdThread              = unix.O_EXCL // PIDFD_THREAD (Linux 6.9)
	siocUnixFile             = 0x89e0      // SIOCUNIXFILE: an O_PATH fd of a unix socket's bound file
	udiagShowVFS             = 0x2
	unixDiagVFS              = 1
	sockaddrUnixLen          = 110 // sizeof(struct sockaddr_un)
)

type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifyProgram is the filter: connect always, sendto when it carries an address,
// sendmsg and sendmmsg always (the address is in memory a filter cannot read) go to the
// supervisor; everything else, and every syscall of a foreign ABI (box's own filter,
// stacked by bwrap, kills those), is allowed here.
func notifyProgram() ([]unix.SockFilter, error) {
	var audit uint32
	switch runtime.GOARCH {
	case "amd64":
		audit = 0xc000003e
	case "arm64":
		audit = 0xc00000b7
	default:
		return nil, fmt.Errorf("unix socket mediation: architecture %s is not supported", runtime.GOARCH)
	}
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Jump offsets count from the next instruction; allow is at 11, notify at 12.
	return []unix.SockFilter{
		{Code: ld, K: 4}, // arch
		{Code: jeq, K: audit, Jt: 0, Jf: 9},
		{Code: ld, K: 0}, // nr
		{Code: jeq, K: uint32(unix.SYS_CONNECT), Jt: 8},
		{Code: jeq, K: uint32(unix.SYS_SENDMSG), Jt: 7},
		{Code: jeq, K: uint32(unix.SYS_SENDMMSG), Jt: 6},
		{Code: jeq, K: uint32(unix.SYS_SENDTO), Jt: 0, Jf: 4},
		{Code: ld, K: 16 + 4*8}, // args[4] (dest_addr), low half
		{Code: jeq, K: 0, Jt: 0, Jf: 3},
		{Code: ld, K: 16 + 4*8 + 4}, // high half
		{Code: jeq, K: 0, Jt: 0, Jf: 1},
		{Code: ret, K: seccompRetAllow},
		{Code: ret, K: unix.SECCOMP_RET_USER_NOTIF},
	}, nil
}

// sockGuard is the supervisor of one sandbox's unix sockets.
type sockGuard struct {
	cfg      UnixSockets
	listener int // the filter's notification fd (-1: none)
	pidns    uint64
	child    int // the sandbox's pid 1 (0: every process is looked at)
	// roots, when set, adds more starting points to the walk from child (the Landlock
	// mode: orphans re-parented to box, which has no pid namespace to hold them).
	roots    func() []int
	stopR    *os.File
	stopW    *os.File
	done     chan struct{}
	handlers sync.WaitGroup
	// slots bounds the notifications served at once (maxNotifications, the receiver
	// among them); quit closes at stop, for a receiver waiting for a slot.
	slots chan struct{}
	quit  chan struct{}
}

// maxNotifications bounds the sandbox's calls box serves at once. A connect or a send box
// makes for the sandbox may block (a listener whose queue is full drops the SYN, and a
// connect waits through the retries, about two minutes; a peer that does not read), and
// each blocked one held an OS thread and three descriptors of box's: a sandbox of 300
// threads each blocked in a connect gave box 310 threads (measured), counted against the
// operator's own process limit (ulimit -u, the bound the default pids leaves half of for
// the operator's other sessions) and, past Go's 10,000, ending box mid-run (a hostile
// review). Past the bound the sandbox's calls wait in the kernel for one to end.
const maxNotifications = 128

// newSockGuard is nil when the plan does not mediate (or a test build switched it off).
func newSockGuard(cfg UnixSockets) *sockGuard {
	if !cfg.Mediate || protectionOff(ProtSockets) {
		return nil
	}
	if protectionOff(ProtAbstract) {
		cfg.ScopeAbstract = false
	}
	return &sockGuard{cfg: cfg, listener: -1}
}

// install puts the calling thread (spawn's, locked, never reused) under the filter; bwrap
// and everything in the sandbox inherit it. No-op on a nil guard.
func (g *sockGuard) install() error {
	if g == nil {
		return nil
	}
	prog, err := notifyProgram()
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("unix socket mediation: no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("unix socket mediation: installing the notification filter: %w", e)
	}
	g.listener = int(fd)
	return nil
}

// start serves the filter's notifications for the sandbox whose pid 1 is child. Until
// it runs, a connect in the sandbox waits; if the supervisor ever stops, the filter's
// notifications fail with ENOSYS: closed.
func (g *sockGuard) start(child int) error {
	if g == nil || g.listener < 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(child)+"/ns/pid", &st); err != nil {
		return fmt.Errorf("unix socket mediation: the sandbox's pid namespace: %w", err)
	}
	g.child = child
	return g.begin(st.Ino)
}

// begin serves for the sandbox whose pid namespace has inode pidns.
func (g *sockGuard) begin(pidns uint64) error {
	g.pidns = pidns
	var err error
	if g.stopR, g.stopW, err = os.Pipe(); err != nil {
		return err
	}
	g.done = make(chan struct{})
	g.slots, g.quit = make(chan struct{}, maxNotifications), make(chan struct{})
	go g.serve()
	return nil
}

// stop ends the supervisor and closes the listener. No-op on a nil guard.
func (g *sockGuard) stop() {
	if g == nil {
		return
	}
	if g.done != nil {
		close(g.quit)
		g.stopW.Close()
		<-g.done
		g.handlers.Wait()
		g.stopR.Close()
	}
	if g.listener >= 0 {
		unix.Close(g.listener)
		g.listener = -1
	}
}

// serve receives the filter's notifications, one receiver at a time. The goroutine that
// receives one answers it itself, after starting the next receiver: a connect box makes
// on the sandbox's behalf may block, and no notification waits behind it, while the
// answer takes no hop to another thread first (every launch waits on two: bwrap's own
// netlink sends that bring up the sandbox's loopback). done closes when receiving ends.
//
// A receiver takes a slot first (maxNotifications): when every slot is held by a call
// that blocks, the next notification waits in the kernel, not in a thread of box's.
func (g *sockGuard) serve() {
	select {
	case g.slots <- struct{}{}:
	case <-g.quit:
		close(g.done)
		return
	}
	n, ok := g.receive()
	if !ok {
		<-g.slots
		close(g.done)
		return
	}
	g.handlers.Add(1)
	defer g.handlers.Done()
	defer func() { <-g.slots }()
	go g.serve()
	r := g.decide(&n)
	r.ID = n.ID
	unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r)))
}

// receive waits for the next notification; false once box stops serving (or the
// listener fails).
func (g *sockGuard) receive() (seccompNotif, bool) {
	fds := []unix.PollFd{{Fd: int32(g.listener), Events: unix.POLLIN}, {Fd: int32(g.stopR.Fd()), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return seccompNotif{}, false
		}
		if fds[1].Revents != 0 || fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && fds[0].Revents&unix.POLLIN == 0 {
			return seccompNotif{}, false
		}
		var n seccompNotif
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n))); e != 0 {
			if e == unix.EINTR || e == unix.ENOENT {
				continue // the caller died, or a signal
			}
			return seccompNotif{}, false
		}
		return n, true
	}
}

func cont() seccompResp             { return seccompResp{Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE} }
func fail(e unix.Errno) seccompResp { return seccompResp{Error: -int32(e)} }
func result(v uintptr, e unix.Errno) seccompResp {
	if e != 0 {
		return fail(e)
	}
	return seccompResp{Val: int64(v)}
}

// errRefused is what the sandbox sees for a host socket: EACCES ("Permission denied"),
// as a Landlock refusal would read, so it is not mistaken for a server that is down.
const errRefused = unix.EACCES

// valid reports whether the notification's caller is still the one blocked in it (so
// a pid read after it named that very thread).
func (g *sockGuard) valid(n *seccompNotif) bool {
	id := n.ID
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), seccompIoctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// decide answers one notification. The decision is on the socket object (pidfd_getfd of
// the caller's fd, so an fd number swapped afterwards changes nothing) and on box's own
// copy of the address: every connect of a unix socket is made by box, on that object,
// with that copy. Whatever box cannot read or classify is refused.
func (g *sockGuard) decide(n *seccompNotif) seccompResp {
	tid := int(n.Pid)
	pidfd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != nil {
		pidfd, err = unix.PidfdOpen(tgidOf(tid), 0)
	}
	if err != nil {
		return fail(errRefused)
	}
	defer unix.Close(pidfd)
	if !g.valid(n) {
		return fail(errRefused)
	}
	a := n.Data.Args
	sock, err := unix.PidfdGetfd(pidfd, int(a[0]), 0)
	if err != nil {
		if err == unix.EBADF {
			return fail(unix.EBADF)
		}
		return fail(errRefused)
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		if err == unix.ENOTSOCK {
			return fail(unix.ENOTSOCK)
		}
		return fail(errRefused)
	}
	typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return fail(errRefused)
	}
	switch n.Data.Nr {
	case int32(unix.SYS_CONNECT):
		if domain != unix.AF_UNIX {
			// This socket cannot reach a unix one, but continuing would let a racing
			// thread put a unix socket at the same fd number first: box connects this
			// very socket, with its own copy of the address.
			return g.connectOther(n, tid, sock, domain, uintptr(a[1]), int(a[2]))
		}
		return g.connect(n, tid, sock, uintptr(a[1]), int(a[2]))
	default: // sendto with an address, sendmsg, sendmmsg
		if protectionOff(ProtSocketSends) {
			// The test build's way back to the race this closes: a send on a socket
			// that is not a unix datagram one continued, its fd number and address
			// read again by the kernel.
			if domain != unix.AF_UNIX || typ != unix.SOCK_DGRAM {
				return cont()
			}
			return fail(errRefused)
		}
		// Never continued (the kernel would read the fd number and the address again):
		// box sends, on this very socket, with its own copy of everything.
		return g.send(n, tid, pidfd, sock, domain, typ)
	}
}

// connectOther makes a connect of a socket that is not AF_UNIX on the caller's behalf.
func (g *sockGuard) connectOther(n *seccompNotif, tid, sock, domain int, addr uintptr, size int) seccompResp {
	if size < 0 || size > unix.SizeofSockaddrAny {
		return fail(unix.EINVAL) // the kernel's own answer for such a length
	}
	var buf []byte
	if size > 0 {
		var err error
		if buf, err = readMem(tid, addr, size); err != nil || !g.valid(n) {
			return fail(unix.EFAULT)
		}
	}
	if domain == unix.AF_NETLINK && len(buf) > 0 {
		// A netlink connect to another port or a group is checked against box's
		// CAP_NET_ADMIN over the sandbox's namespace (netlinkName); the kernel's own
		// address needs none and is made as asked.
		if _, e := netlinkName(buf); e != 0 {
			return fail(e)
		}
	}
	p := unsafe.Pointer(nil)
	if size > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(p), uintptr(size))
	runtime.KeepAlive(buf)
	return result(0, e)
}

// connect makes the sandbox's connect itself, on the caller's socket, when the address
// is the sandbox's own or a profile's; else refuses it.
func (g *sockGuard) connect(n *seccompNotif, tid, sock int, addr uintptr, size int) seccompResp {
	if size < 2 || size > sockaddrUnixLen {
		return fail(unix.EINVAL) // the kernel's own answer for such a length
	}
	buf, err := readMem(tid, addr, size)
	if err != nil || !g.valid(n) {
		return fail(errRefused)
	}
	raw := func(b []byte) seccompResp {
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		return result(0, e)
	}
	// AF_UNSPEC dissolves a datagram association, an autobind-sized address is refused
	// by the kernel: such addresses pass as box copied them.
	sa, pf, e := g.unixTarget(tid, buf)
	if e != 0 {
		return fail(e)
	}
	if pf >= 0 {
		defer unix.Close(pf)
	}
	return raw(sa)
}

// unixTarget applies the policy to a unix address the sandbox connects or sends to (box's
// copy, buf). A path is resolved as the caller would resolve it and must be one of the
// profile's sockets or bound by a socket the sandbox holds; it becomes box's
// /proc/self/fd/N of that socket file (pf, to close after use), so the inode box decided
// on is the one reached (a socket file is bound once; a rename over the path afterwards
// changes nothing). An abstract name at tier full passes only if the sandbox's; other
// addresses pass as they are (pf -1).
func (g *sockGuard) unixTarget(tid int, buf []byte) (sa []byte, pf int, e unix.Errno) {
	path, kind := sunPath(buf)
	switch kind {
	case addrOther:
		return buf, -1, 0
	case addrAbstract:
		if g.cfg.HostNet && g.cfg.ScopeAbstract && !g.ownsAbstract(path) {
			return nil, -1, unix.EPERM // what the Landlock scope answers
		}
		// The socket's own network namespace holds the name: at the other tiers, the
		// sandbox's.
		return buf, -1, 0
	}
	pf, err := openInTarget(tid, path)
	if err != nil {
		if errors.As(err, &e) && (e == unix.ENOENT || e == unix.ENOTDIR || e == unix.EACCES || e == unix.ELOOP) {
			return nil, -1, e
		}
		return nil, -1, errRefused
	}
	var st unix.Stat_t
	e = 0
	switch {
	case unix.Fstat(pf, &st) != nil:
		e = errRefused
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		e = unix.ECONNREFUSED
	case !g.allowed(tid, st) && !g.ownsPath(st):
		e = errRefused
	}
	if e != 0 {
		unix.Close(pf)
		return nil, -1, e
	}
	p := "/proc/self/fd/" + strconv.Itoa(pf)
	sa = make([]byte, 2, 2+len(p)+1)
	binary.NativeEndian.PutUint16(sa, unix.AF_UNIX)
	sa = append(append(sa, p...), 0)
	return sa, pf, 0
}

type addrKind int

const (
	addrOther addrKind = iota
	addrAbstract
	addrPath
)

// sunPath classifies a sockaddr as the kernel reads it: a path (up to its NUL), an
// abstract name (every byte after the leading NUL), or something else.
func sunPath(b []byte) (string, addrKind) {
	if len(b) < 2 || uint16(b[0])|uint16(b[1])<<8 != unix.AF_UNIX || len(b) == 2 {
		return "", addrOther
	}
	p := b[2:]
	if p[0] == 0 {
		return string(p), addrAbstract
	}
	if i := strings.IndexByte(string(p), 0); i >= 0 {
		p = p[:i]
	}
	return string(p), addrPath
}

func readMem(tid int, addr uintptr, n int) ([]byte, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(tid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(addr)); err != nil {
		return nil, err
	}
	return b, nil
}

func tgidOf(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return -1
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// openInTarget opens path (O_PATH) as the thread tid would resolve it: in its root, from
// its working directory, '..' and absolute symlinks kept inside that root. A magic link
// (/proc/PID/fd/N) is refused (ELOOP): box cannot tell whose it would be.
func openInTarget(tid int, path string) (int, error) {
	proc := "/proc/" + strconv.Itoa(tid)
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	if !strings.HasPrefix(path, "/") {
		// The working directory's path inside the sandbox, checked to be the very
		// directory the thread is in (a deleted or moved one is refused).
		cwd, err := os.Readlink(proc + "/cwd")
		if err != nil || !strings.HasPrefix(cwd, "/") {
			return -1, errors.New("working directory unreadable")
		}
		var want, got unix.Stat_t
		if err := unix.Stat(proc+"/cwd", &want); err != nil {
			return -1, err
		}
		dfd, err := unix.Openat2(root, cwd, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: how.Resolve})
		if err != nil {
			return -1, err
		}
		err = unix.Fstat(dfd, &got)
		unix.Close(dfd)
		if err != nil || got.Dev != want.Dev || got.Ino != want.Ino {
			return -1, errors.New("working directory moved")
		}
		path = cwd + "/" + path
	}
	return unix.Openat2(root, path, how)
}

// allowed reports whether st is one of the profile's sockets, resolved now in the
// sandbox's root (a server restarted since launch has a new inode).
func (g *sockGuard) allowed(tid int, st unix.Stat_t) bool {
	for _, a := range g.cfg.Allowed {
		fd, err := openInTarget(tid, a)
		if err != nil {
			continue
		}
		var s unix.Stat_t
		err = unix.Fstat(fd, &s)
		unix.Close(fd)
		if err == nil && s.Dev == st.Dev && s.Ino == st.Ino {
			return true
		}
	}
	return false
}

// sandboxSockets calls f with each unix socket a process of the sandbox (its pid
// namespace) holds, until f says stop. A process box cannot read is passed over: its
// sockets count as not the sandbox's.
func (g *sockGuard) sandboxSockets(f func(sock int) bool) {
	for _, pid := range g.pids() {
		dir := "/proc/" + strconv.Itoa(pid)
		var ns unix.Stat_t
		if unix.Stat(dir+"/ns/pid", &ns) != nil || ns.Ino != g.pidns {
			continue
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		stop := false
		for _, fd := range fds {
			l, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			n, _ := strconv.Atoi(fd.Name())
			s, err := unix.PidfdGetfd(pidfd, n, 0)
			if err != nil {
				continue
			}
			if d, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_DOMAIN); err == nil && d == unix.AF_UNIX {
				stop = f(s)
			}
			unix.Close(s)
			if stop {
				break
			}
		}
		unix.Close(pidfd)
		if stop {
			return
		}
	}
}

// pids are the candidates for the sandbox's processes: its pid 1 and their descendants
// (an orphan in the sandbox is re-parented to its pid 1), or every process when the
// pid 1 is not known. sandboxSockets checks each one's pid namespace.
func (g *sockGuard) pids() []int {
	var out []int
	if g.child == 0 {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, pid)
			}
		}
		return out
	}
	seen := map[int]bool{}
	queue := []int{g.child}
	if g.roots != nil {
		queue = append(queue, g.roots()...)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, pid)
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, t := range tasks {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// ownsPath reports whether the socket file st is bound by a socket the sandbox holds.
func (g *sockGuard) ownsPath(st unix.Stat_t) bool {
	found := false
	g.sandboxSockets(func(s int) bool {
		found = boundTo(s, st)
		return found
	})
	return found
}

// ownsAbstract reports whether the abstract name (leading NUL included) is bound by a
// socket the sandbox holds.
func (g *sockGuard) ownsAbstract(name string) bool {
	found := false
	g.sandboxSockets(func(s int) bool {
		sa, err := unix.Getsockname(s)
		if u, ok := sa.(*unix.SockaddrUnix); err == nil && ok && len(name) > 0 && u.Name == "@"+name[1:] {
			found = true
		}
		return found
	})
	return found
}

// boundTo reports whether socket s is bound to the file st. SIOCUNIXFILE answers where
// box holds CAP_NET_ADMIN over the socket's network namespace (the sandbox's own, at
// every tier but full); in the host's (tier full), the sock_diag netlink interface of
// box's own namespace gives the bound file's device and inode.
func boundTo(s int, st unix.Stat_t) bool {
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s), siocUnixFile, 0)
	if e == 0 {
		var b unix.Stat_t
		err := unix.Fstat(int(fd), &b)
		unix.Close(int(fd))
		return err == nil && b.Dev == st.Dev && b.Ino == st.Ino
	}
	if e != unix.EPERM {
		return false // not bound to a path (ENOENT)
	}
	var self unix.Stat_t
	if unix.Fstat(s, &self) != nil {
		return false
	}
	dev, ino, ok := diagVFS(uint32(self.Ino))
	// unix_diag carries 32 bits of the inode and the kernel's own dev_t encoding.
	return ok && ino == uint32(st.Ino) && unix.Major(st.Dev) == dev>>20 && unix.Minor(st.Dev) == dev&0xfffff
}

// diagVFS asks sock_diag (box's network namespace) for the file unix socket ino is
// bound to.
func diagVFS(ino uint32) (dev, vino uint32, ok bool) {
	nl, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, 0, false
	}
	defer unix.Close(nl)
	// nlmsghdr (16) + unix_diag_req (24).
	req := make([]byte, 40)
	ne := func(b []byte, v uint32) { *(*uint32)(unsafe.Pointer(&b[0])) = v }
	ne(req[0:], 40)
	*(*uint16)(unsafe.Pointer(&req[4])) = unix.SOCK_DIAG_BY_FAMILY
	*(*uint16)(unsafe.Pointer(&req[6])) = unix.NLM_F_REQUEST
	req[16] = unix.AF_UNIX
	ne(req[20:], ^uint32(0)) // every state
	ne(req[24:], ino)
	ne(req[28:], udiagShowVFS)
	ne(req[32:], ^uint32(0)) // no cookie
	ne(req[36:], ^uint32(0))
	if err := unix.Sendto(nl, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, 0, false
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(nl, buf, 0)
	if err != nil || n < 16+16 {
		return 0, 0, false
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 || msgs[0].Header.Type != unix.SOCK_DIAG_BY_FAMILY || len(msgs[0].Data) < 16 {
		return 0, 0, false
	}
	d := msgs[0].Data
	if *(*uint32)(unsafe.Pointer(&d[4])) != ino {
		return 0, 0, false
	}
	for a := d[16:]; len(a) >= 4; {
		l := int(*(*uint16)(unsafe.Pointer(&a[0])))
		t := *(*uint16)(unsafe.Pointer(&a[2]))
		if l < 4 || l > len(a) {
			break
		}
		if t == unixDiagVFS && l >= 12 {
			return *(*uint32)(unsafe.Pointer(&a[8])), *(*uint32)(unsafe.Pointer(&a[4])), true
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	return 0, 0, false
}
