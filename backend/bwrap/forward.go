package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heavy-duty/box/internal/acceptloop"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// The forwarder is box's side of a sandbox's ports. Why this shape: the sandbox's network
// namespace belongs to the user namespace bwrap made; entering it takes setns, which a Go
// process cannot do once it runs threads, so box starts a small helper of its own
// (ForwardMain) in the sandbox's user and network namespaces through nsenter, as the
// allowlist tier does. The helper never touches a byte of traffic: it binds the listeners
// for the named host ports on host.box.internal and hands box fresh sockets of the
// sandbox's namespace; box holds every connection, both ends in its own process, and
// copies between them (splice(2) under io.Copy). Nothing of the host is in the sandbox
// but those listeners, and box decides every host port it dials itself.

type publisher struct {
	m   policy.PortMap
	lns []net.Listener // 127.0.0.1, and ::1 where the host has it
}

type forwarder struct {
	ports  Ports
	pub    []publisher
	inside []net.Listener // the host ports' listeners, in the sandbox's namespace

	helper *exec.Cmd
	out    *bytes.Buffer
	pair   *os.File
	mu     sync.Mutex // one socket request at a time on pair
	// helperDone closes when the helper has exited (helperErr its Wait's error). A
	// helper that serves sockets and ends before close ended mid-run: the published
	// ports answered nothing from then on, and close says so on warn.
	helperDone chan struct{}
	helperErr  error
	warn       io.Writer

	// pool holds fresh IPv4 sockets of the sandbox's namespace, asked for ahead of the
	// connections that take them: a connection does not wait for the helper's round trip
	// (measured: half the published port's connection latency on a busy machine).
	pool chan int
	quit chan struct{}

	// slots bounds the connections carried at once, both directions and every port
	// together (maxForwardConns): a sandbox looping connects to host.box.internal held
	// about six descriptors each until box's were gone, and with them the ssh filter's
	// and the other listeners' accepts (a hostile review's finding).
	slots chan struct{}

	cmu    sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
	once   sync.Once
}

// openPorts binds the published ports on the host's loopback (a taken port is a
// *PortTakenError, before anything starts) and writes the sandbox's /etc/hosts. nil
// when nothing is forwarded.
func (p *Plan) openPorts(warn io.Writer) (*forwarder, error) {
	pr := p.Spec.Ports
	if !pr.Any() {
		return nil, nil
	}
	f := &forwarder{ports: pr, conns: map[net.Conn]bool{}, pool: make(chan int, socketPool), quit: make(chan struct{}),
		slots: make(chan struct{}, maxForwardConns), warn: warn}
	if pr.HostsFile != "" {
		host, err := os.ReadFile("/etc/hosts")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("host ports: the host's /etc/hosts: %w", err)
		}
		if err := os.WriteFile(pr.HostsFile, hostsFile(host), 0o644); err != nil {
			return nil, fmt.Errorf("host ports: %w", err)
		}
	}
	for _, m := range pr.Publish {
		pb := publisher{m: m}
		v4, v6 := "127.0.0.1", "::1"
		if protectionOff(ProtPorts) {
			v4, v6 = "0.0.0.0", "::" // widened (a test build): every host address
		}
		ln, err := net.Listen("tcp4", net.JoinHostPort(v4, strconv.Itoa(int(m.Host))))
		if err != nil && slices.Contains(pr.Shared, m.Host) {
			fmt.Fprintf(warn, "box: warning: box expose: 127.0.0.1:%d is taken (by another program): this session does not publish port %d\n", m.Host, m.Sandbox)
			continue
		}
		if err != nil {
			f.close()
			return nil, &PortTakenError{Addr: net.JoinHostPort(v4, strconv.Itoa(int(m.Host))), Err: err}
		}
		pb.lns = append(pb.lns, ln)
		ln6, err := net.Listen("tcp6", net.JoinHostPort(v6, strconv.Itoa(int(m.Host))))
		switch {
		case err == nil:
			pb.lns = append(pb.lns, ln6)
		case errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT):
			// The host has no ::1 (IPv6 off): 127.0.0.1 alone.
		case slices.Contains(pr.Shared, m.Host):
			ln.Close()
			fmt.Fprintf(warn, "box: warning: box expose: [::1]:%d is taken (by another program): this session does not publish port %d\n", m.Host, m.Sandbox)
			continue
		default:
			ln.Close()
			f.close()
			return nil, &PortTakenError{Addr: net.JoinHostPort(v6, strconv.Itoa(int(m.Host))), Err: err}
		}
		f.pub = append(f.pub, pb)
	}
	return f, nil
}

// hook wraps the launch's BeforeRelease: after next (the tier's own attach), the helper
// goes into the sandbox's namespaces and the forwarding starts, before the command runs.
func (f *forwarder) hook(next func(int) (func(), error)) func(int) (func(), error) {
	if f == nil {
		return next
	}
	return func(pid int) (func(), error) {
		cleanup := func() {}
		if next != nil {
			c, err := next(pid)
			if err != nil {
				return nil, err
			}
			if c != nil {
				cleanup = c
			}
		}
		if err := f.attach(pid); err != nil {
			cleanup()
			return nil, err
		}
		return func() { f.close(); cleanup() }, nil
	}
}

// attach starts the helper in the namespaces of the sandbox whose pid 1 is pid, takes
// the host ports' listeners from it and starts serving.
func (f *forwarder) attach(pid int) error {
	if len(f.pub) == 0 && len(f.ports.HostPorts) == 0 {
		return nil // every port was shared and taken
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return errs.WithHint(fmt.Errorf("ports: nsenter: %w", err), "install util-linux (nsenter): box enters the sandbox's network namespace with it to forward ports")
	}
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return fmt.Errorf("ports: sandbox pid %d: %w", pid, err)
	}
	defer netns.Close()
	var st, own unix.Stat_t
	if err := unix.Fstat(int(netns.Fd()), &st); err != nil {
		return fmt.Errorf("ports: %w", err)
	}
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		return fmt.Errorf("ports: %w", err)
	}
	if st.Ino == own.Ino && st.Dev == own.Dev {
		// Fail closed: a listener "inside" would be on the host.
		return fmt.Errorf("ports: sandbox pid %d shares box's network namespace", pid)
	}
	ufd, err := unix.IoctlRetInt(int(netns.Fd()), 0xb701) // NS_GET_USERNS
	if err != nil {
		return fmt.Errorf("ports: the owner of the sandbox's network namespace: %w", err)
	}
	userns := os.NewFile(uintptr(ufd), "userns")
	defer userns.Close()
	if err := waitUIDMap(pid); err != nil {
		return err
	}
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("ports: open own binary: %w", err)
	}
	defer exe.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("ports: socketpair: %w", err)
	}
	f.pair = os.NewFile(uintptr(fds[0]), "forward")
	theirs := os.NewFile(uintptr(fds[1]), "forward-helper")
	args := []string{"--user=/proc/self/fd/3", "--net=/proc/self/fd/4", "--preserve-credentials", "--",
		"/proc/self/fd/5", ForwardSubcommand}
	if len(f.ports.HostPorts) > 0 {
		args = append(args, "-host-ports", strings.ReplaceAll(portList(f.ports.HostPorts), " ", ""))
	}
	if len(f.pub) > 0 {
		args = append(args, "-serve")
	}
	widen := protectionOff(ProtPorts) && len(f.ports.HostPorts) > 0
	if widen {
		args = append(args, "-widen")
	}
	f.out = &bytes.Buffer{}
	cmd := exec.Command(nsenter, args...)
	cmd.ExtraFiles = []*os.File{userns, netns, exe, theirs}
	cmd.Stdout, cmd.Stderr = f.out, f.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return fmt.Errorf("ports: start the helper: %w", err)
	}
	f.helper, f.helperDone = cmd, make(chan struct{})
	go func() { f.helperErr = cmd.Wait(); close(f.helperDone) }()
	n := len(f.ports.HostPorts)
	if widen {
		n++
	}
	lns, err := f.receiveListeners(n)
	if err != nil {
		f.helper.Process.Kill()
		<-f.helperDone
		return fmt.Errorf("ports: %w: %s", err, strings.TrimSpace(f.out.String()))
	}
	f.inside = lns
	for i, ln := range f.inside {
		if i == len(f.ports.HostPorts) { // widened: the port the sandbox asked for
			f.serve(ln, func(c net.Conn) { f.toHost(c, originalPort(c)) })
			continue
		}
		port := f.ports.HostPorts[i]
		f.serve(ln, func(c net.Conn) { f.toHost(c, port) })
	}
	if len(f.pub) > 0 {
		f.wg.Add(1)
		go func() { defer f.wg.Done(); f.fill() }()
	}
	for _, pb := range f.pub {
		for _, ln := range pb.lns {
			port := pb.m.Sandbox
			f.serve(ln, func(c net.Conn) { f.toSandbox(c, port) })
		}
	}
	return nil
}

// pooled is a fresh socket: an IPv4 one from the pool when it has one.
func (f *forwarder) pooled(v6 bool) (int, error) {
	if !v6 {
		select {
		case fd := <-f.pool:
			return fd, nil
		default:
		}
	}
	return f.socket(v6)
}

// socketPool is how many sockets the forwarder keeps asked for ahead.
const socketPool = 8

// fill keeps the pool full until the forwarder closes or the helper fails.
func (f *forwarder) fill() {
	for {
		fd, err := f.socket(false)
		if err != nil {
			return // the helper is gone: dialSandbox asks it itself, and fails aloud
		}
		select {
		case f.pool <- fd:
		case <-f.quit:
			unix.Close(fd)
			return
		}
	}
}

// waitUIDMap waits until bwrap's child has written its user namespace's maps: entering
// before that, the helper would be nobody there.
func waitUIDMap(pid int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		u, uerr := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
		g, gerr := os.ReadFile(fmt.Sprintf("/proc/%d/gid_map", pid))
		if uerr != nil || gerr != nil {
			return fmt.Errorf("ports: sandbox pid %d: %w", pid, errors.Join(uerr, gerr))
		}
		if len(bytes.TrimSpace(u)) > 0 && len(bytes.TrimSpace(g)) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ports: sandbox pid %d never mapped its user namespace", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// receiveListeners reads the helper's first message: "ok" and n listeners.
func (f *forwarder) receiveListeners(n int) ([]net.Listener, error) {
	buf, oob := make([]byte, 2), make([]byte, unix.CmsgSpace(4*max(n, 1)))
	got, oobn, _, _, err := unix.Recvmsg(int(f.pair.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("the helper's listeners: %w", err)
	}
	fds, err := rights(oob[:oobn])
	if err != nil {
		return nil, err
	}
	if string(buf[:got]) != "ok" || len(fds) != n {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the helper handed over %d listeners, want %d", len(fds), n)
	}
	var lns []net.Listener
	for _, fd := range fds {
		file := os.NewFile(uintptr(fd), "host-port")
		ln, err := net.FileListener(file)
		file.Close()
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func rights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		r, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			return fds, err
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

// socket asks the helper for a fresh TCP socket of the sandbox's namespace.
func (f *forwarder) socket(v6 bool) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	req := []byte{reqSocket4}
	if v6 {
		req[0] = reqSocket6
	}
	if _, err := f.pair.Write(req); err != nil {
		return -1, err
	}
	buf, oob := make([]byte, 2), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(f.pair.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, err
	}
	fds, err := rights(oob[:oobn])
	if err != nil || string(buf[:n]) != "ok" || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("the helper made no socket (%q, %v)", buf[:n], err)
	}
	return fds[0], nil
}

// dialSandbox connects to the sandbox's own loopback: 127.0.0.1, else ::1 (a dev server
// on "localhost" may listen on either). The connection it returns is tracked (closed by
// close); the caller untracks it.
//
// The connect never blocks a thread and ends with the forwarder: the sandbox's server
// decides when it completes. A listener whose queue is full (a small backlog never
// accepted, or a server too busy to) drops the SYN, and a blocking connect then waited
// through the SYN retries, about two minutes, in a system call close could not end:
// each such connection held an OS thread, and box's exit waited for the last of them
// (a hostile review; a page the sandbox serves to the operator's browser can open
// hundreds).
func (f *forwarder) dialSandbox(port uint16) (net.Conn, error) {
	var last error
	for _, v6 := range []bool{false, true} {
		fd, err := f.pooled(v6)
		if err != nil {
			return nil, err
		}
		var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}
		if v6 {
			sa = &unix.SockaddrInet6{Port: int(port), Addr: [16]byte{15: 1}}
		}
		// net.FileConn makes the socket non-blocking and gives it to the runtime's poller
		// before the connect, so the wait below is the poller's, and close ends it.
		file := os.NewFile(uintptr(fd), "published")
		c, err := net.FileConn(file)
		file.Close()
		if err != nil {
			return nil, err
		}
		if !f.track(c) {
			c.Close()
			return nil, net.ErrClosed
		}
		if err := connectPolled(c, sa); err != nil {
			f.untrack(c)
			last = err
			continue
		}
		return c, nil
	}
	return nil, last
}

// connectPolled connects c's socket (non-blocking, unconnected) to sa, waiting for the
// handshake in the poller: it returns when the connection is made or refused, or c is
// closed.
func connectPolled(c net.Conn, sa unix.Sockaddr) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("ports: %T is not a socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) { cerr = unix.Connect(int(fd), sa) }); err != nil {
		return err
	}
	if cerr == nil || !errors.Is(cerr, unix.EINPROGRESS) {
		return cerr
	}
	// As the net package's own connect: writable means done, SO_ERROR says how; a
	// wake-up with neither an error nor a peer is spurious.
	werr := rc.Write(func(fd uintptr) bool {
		n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			cerr = err
			return true
		}
		switch e := unix.Errno(n); e {
		case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
			return false
		case 0, unix.EISCONN:
			if _, err := unix.Getpeername(int(fd)); err != nil {
				return false
			}
			cerr = nil
			return true
		default:
			cerr = e
			return true
		}
	})
	if werr != nil {
		return werr
	}
	return cerr
}

// maxForwardConns is how many connections a forwarder carries at once: each holds about
// six descriptors (two sockets, the splice pipes), so 512 stay far below box's limit.
// One past it is closed at once; the ones carried are not disturbed.
const maxForwardConns = 512

// serve accepts on ln until it is closed, carrying at most cap(f.slots) connections at
// once. An accept that fails for want of descriptors (EMFILE, ENFILE) or memory backs
// off, as net/http's server does, instead of spinning.
func (f *forwarder) serve(ln net.Listener, handle func(net.Conn)) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		var wait acceptloop.Backoff
		for {
			c, err := ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if acceptloop.Exhausted(err) {
					select {
					case <-time.After(wait.Next()):
					case <-f.quit:
						return
					}
				}
				continue // ECONNABORTED and the like: this connection only
			}
			wait.Reset()
			select {
			case f.slots <- struct{}{}:
			default:
				c.Close() // full: the sandbox's flood, not the connections carried
				continue
			}
			if !f.track(c) {
				c.Close()
				<-f.slots
				return
			}
			f.wg.Add(1)
			go func() { defer f.wg.Done(); defer func() { <-f.slots }(); handle(c) }()
		}
	}()
}

// toSandbox carries a host connection to the sandbox's port.
func (f *forwarder) toSandbox(c net.Conn, port uint16) {
	defer f.untrack(c)
	in, err := f.dialSandbox(port)
	if err != nil {
		return // nothing listens there: the client sees its connection closed
	}
	defer f.untrack(in)
	pipe(c, in)
}

// toHost carries a sandbox connection to host.box.internal:port to the host's
// 127.0.0.1:port: the one host address and the ports box itself decided.
func (f *forwarder) toHost(c net.Conn, port uint16) {
	defer f.untrack(c)
	out, err := net.DialTimeout("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))), 10*time.Second)
	if err != nil {
		return
	}
	if !f.track(out) {
		out.Close()
		return
	}
	defer f.untrack(out)
	pipe(c, out)
}

// pipe copies both ways (splice(2) between TCP sockets), passing each half-close on.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		spliceCopy(a, b)
		closeWrite(a)
		close(done)
	}()
	spliceCopy(b, a)
	closeWrite(b)
	<-done
}

// spliceCopy is io.Copy from src to dst, which between TCP sockets is splice(2) through a
// pipe, with the splices made as raw system calls: both sockets and the pipe are
// non-blocking, so no call ever waits, and the runtime need not be told of it. Told (as
// io.Copy's are), the runtime wakes its monitor thread (sysmon) at each call made after
// the process was idle, and a download's splices kept it waking: an eighth of the
// forwarder's CPU and as many context switches again as the copying itself (perf on
// BenchmarkPublish). Anything but two TCP sockets, or no pipe: io.Copy.
func spliceCopy(dst, src net.Conn) {
	sc, sok := src.(*net.TCPConn)
	dc, dok := dst.(*net.TCPConn)
	var p [2]int
	if !sok || !dok || unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) != nil {
		io.Copy(dst, src)
		return
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	// As io.Copy's own pipes: 1 MiB (pipe-max-size's default) where allowed.
	unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, spliceChunk)
	rs, rerr := sc.SyscallConn()
	ws, werr := dc.SyscallConn()
	if rerr != nil || werr != nil {
		io.Copy(dst, src)
		return
	}
	for {
		var n int
		var err error
		if rerr := rs.Read(func(fd uintptr) bool {
			n, err = rawSplice(int(fd), p[1], spliceChunk)
			return err != unix.EAGAIN
		}); rerr != nil || err != nil || n == 0 {
			return // an error, or src's end (n == 0)
		}
		for n > 0 {
			var m int
			if werr := ws.Write(func(fd uintptr) bool {
				m, err = rawSplice(p[0], int(fd), n)
				return err != unix.EAGAIN
			}); werr != nil || err != nil {
				return
			}
			n -= m
		}
	}
}

// spliceChunk is the most one splice moves (and the pipe's size).
const spliceChunk = 1 << 20

// rawSplice moves up to n bytes from in to out, never waiting (SPLICE_F_NONBLOCK, and
// the sockets are non-blocking): 0 is in's end.
func rawSplice(in, out, n int) (int, error) {
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		t.CloseWrite()
	}
}

func (f *forwarder) track(c net.Conn) bool {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = true
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	c.Close()
	f.cmu.Lock()
	delete(f.conns, c)
	f.cmu.Unlock()
}

// close stops everything: listeners, connections, the helper. Idempotent, nil-safe.
func (f *forwarder) close() {
	if f == nil {
		return
	}
	f.once.Do(func() {
		close(f.quit)
		f.cmu.Lock()
		f.closed = true
		for c := range f.conns {
			c.Close()
		}
		f.cmu.Unlock()
		for _, pb := range f.pub {
			for _, ln := range pb.lns {
				ln.Close()
			}
		}
		for _, ln := range f.inside {
			ln.Close()
		}
		died := false
		if f.helper != nil {
			select {
			case <-f.helperDone:
				// Ended before the run did. Without -serve that is its job done (it
				// handed over the host ports' listeners); with it, it is a death.
				died = len(f.pub) > 0
			default:
				// Its death ends a request box is waiting on; then the pair can go.
				f.helper.Process.Kill()
				<-f.helperDone
			}
		}
		if died && f.warn != nil {
			why := "exited"
			if f.helperErr != nil {
				why = f.helperErr.Error()
			}
			if out := strings.TrimSpace(f.out.String()); out != "" {
				why += ": " + out
			}
			fmt.Fprintf(f.warn, "box: warning: ports: box's port helper in the sandbox's network namespace ended while the sandbox ran (%s): the published ports closed new connections from then on, once the sockets it had made ahead were used\n", why)
		}
		if f.pair != nil {
			f.mu.Lock()
			f.pair.Close()
			f.mu.Unlock()
		}
		f.wg.Wait()
		for len(f.pool) > 0 {
			unix.Close(<-f.pool)
		}
	})
}

// originalPort is the port a redirected connection was sent to (SO_ORIGINAL_DST): the
// widened test build only.
func originalPort(c net.Conn) uint16 {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0
	}
	var port uint16
	rc.Control(func(fd uintptr) {
		m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err == nil {
			port = uint16(m.Multiaddr[2])<<8 | uint16(m.Multiaddr[3])
		}
	})
	return port
}
