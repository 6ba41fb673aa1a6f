package bwrap

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestSunPath(t *testing.T) {
	sa := func(path string) []byte { return append([]byte{unix.AF_UNIX, 0}, path...) }
	for _, c := range []struct {
		in   []byte
		want string
		kind addrKind
	}{
		{sa("./dev.sock"), "./dev.sock", addrPath},
		{sa("/run/x\x00trailing"), "/run/x", addrPath},
		{sa("\x00name"), "\x00name", addrAbstract},
		{sa(""), "", addrOther},
		{[]byte{unix.AF_INET, 0, 1, 2}, "", addrOther},
		{[]byte{unix.AF_UNIX}, "", addrOther},
	} {
		got, kind := sunPath(c.in)
		if got != c.want || kind != c.kind {
			t.Errorf("sunPath(%q) = %q, %d; want %q, %d", c.in, got, kind, c.want, c.kind)
		}
	}
}

func TestResolveSockets(t *testing.T) {
	for _, c := range []struct {
		name      string
		f         Facts
		named     []string
		nix       bool
		mediate   bool
		allowed   []string
		warnings  []string
		dryRunHas string
	}{
		{name: "mediated", mediate: true, dryRunHas: "unix sockets: only the sandbox's own"},
		{name: "named", named: []string{"dev.sock", "/run/postgresql/.s.PGSQL.5432"}, mediate: true,
			allowed:   []string{"/w/dev.sock", "/run/postgresql/.s.PGSQL.5432"},
			warnings:  []string{`profile "p" lets the sandbox reach the host's unix sockets /w/dev.sock, /run/postgresql/.s.PGSQL.5432 (sockets)`},
			dryRunHas: "also /w/dev.sock, /run/postgresql/.s.PGSQL.5432"},
		{name: "nix daemon", nix: true, mediate: true, allowed: []string{NixDaemonDir + "/socket"}},
		{name: "no user notification", f: Facts{UnixNotify: errors.New("seccomp user notification is unavailable")},
			warnings: []string{"REACHABLE from the sandbox: seccomp user notification is unavailable"}, dryRunHas: "REACHABLE (not mediated"},
		{name: "setuid bwrap", f: Facts{BwrapSetuid: true}, warnings: []string{"bwrap is setuid root"}, dryRunHas: "REACHABLE"},
	} {
		p := &Plan{}
		p.resolveSockets(c.named, "p", "/w", false, false, c.nix, c.f)
		u := p.Spec.UnixSockets
		if u.Mediate != c.mediate || strings.Join(u.Allowed, " ") != strings.Join(c.allowed, " ") {
			t.Errorf("%s: %+v", c.name, u)
		}
		if len(p.Warnings) != len(c.warnings) {
			t.Errorf("%s: warnings %q", c.name, p.Warnings)
		}
		for i, w := range c.warnings {
			if i < len(p.Warnings) && !strings.Contains(p.Warnings[i], w) {
				t.Errorf("%s: warning %q, want %q", c.name, p.Warnings[i], w)
			}
		}
		if !strings.Contains(p.SocketsLine(), c.dryRunHas) {
			t.Errorf("%s: dry run %q, want %q", c.name, p.SocketsLine(), c.dryRunHas)
		}
	}
}

// The filter and the supervisor, for real in this process (no bwrap): a thread under the
// filter, whose pid namespace is not the guard's "sandbox", is refused a unix socket this
// process listens on, by path and by a datagram sent with an address, while a TCP connect
// and UDP datagrams (sendto, and a sendmsg box makes itself) pass; the listener never sees
// a connection.
func TestSockGuardRefusesForeign(t *testing.T) {
	if err := UnixNotifySupport(); err != nil {
		t.Skip(err) // the live tests require it
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "host.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	g := newSockGuard(UnixSockets{Mediate: true})
	udpSrv, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udpSrv.Close()
	type res struct{ unixErr, dgramErr, tcpErr, udpErr, udpMsgErr error }
	done := make(chan res, 1)
	installed := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its filter
		if err := g.install(); err != nil {
			installed <- err
			return
		}
		installed <- nil
		var r res
		s, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		r.unixErr = unix.Connect(s, &unix.SockaddrUnix{Name: path})
		unix.Close(s)
		d, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		r.dgramErr = unix.Sendto(d, []byte("x"), 0, &unix.SockaddrUnix{Name: path})
		unix.Close(d)
		s, _ = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		r.tcpErr = unix.Connect(s, &unix.SockaddrInet4{Port: tcp.Addr().(*net.TCPAddr).Port, Addr: [4]byte{127, 0, 0, 1}})
		unix.Close(s)
		u, _ := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		r.udpErr = unix.Sendto(u, []byte("x"), 0, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}})
		_, r.udpMsgErr = unix.SendmsgN(u, []byte("boxsent"), nil, &unix.SockaddrInet4{Port: udpSrv.LocalAddr().(*net.UDPAddr).Port, Addr: [4]byte{127, 0, 0, 1}}, 0)
		unix.Close(u)
		done <- r
	}()
	if err := <-installed; err != nil {
		t.Fatal(err)
	}
	// The guard's sandbox: a pid namespace no process of this test is in.
	if err := g.begin(^uint64(0)); err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	r := <-done
	if !errors.Is(r.unixErr, unix.EACCES) {
		t.Errorf("connect to a socket not the sandbox's: %v, want EACCES", r.unixErr)
	}
	if !errors.Is(r.dgramErr, unix.EACCES) {
		t.Errorf("datagram with an address: %v, want EACCES", r.dgramErr)
	}
	if r.tcpErr != nil || r.udpErr != nil || r.udpMsgErr != nil {
		t.Errorf("TCP connect %v, UDP sendto %v, UDP sendmsg %v: want all to pass", r.tcpErr, r.udpErr, r.udpMsgErr)
	}
	// The sendmsg box made on the thread's behalf arrived, whole.
	b := make([]byte, 16)
	if n, _, err := udpSrv.ReadFrom(b); err != nil || string(b[:n]) != "boxsent" {
		t.Errorf("UDP sendmsg made by box: read %q, %v", b[:n], err)
	}
}

// control passes only control messages checked against no capability (box's, which owns
// the sandbox's namespaces, would grant what the caller lacks) and refuses a malformed one
// as the kernel does.
func TestSendControl(t *testing.T) {
	cmsg := func(level, typ int32) []byte {
		b := make([]byte, unix.CmsgSpace(4))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(4))
		return b
	}
	for _, c := range []struct {
		name string
		ctrl []byte
		want unix.Errno
	}{
		{"IP_TTL", cmsg(unix.SOL_IP, unix.IP_TTL), 0},
		{"UDP_SEGMENT then IPV6_TCLASS", append(cmsg(unix.SOL_UDP, unix.UDP_SEGMENT), cmsg(unix.SOL_IPV6, unix.IPV6_TCLASS)...), 0},
		{"SO_MARK", cmsg(unix.SOL_SOCKET, unix.SO_MARK), unix.EPERM},
		{"SO_PRIORITY after IP_TOS", append(cmsg(unix.SOL_IP, unix.IP_TOS), cmsg(unix.SOL_SOCKET, unix.SO_PRIORITY)...), unix.EPERM},
		{"IPV6_HOPOPTS", cmsg(unix.SOL_IPV6, unix.IPV6_HOPOPTS), unix.EPERM},
		{"SCM_RIGHTS off a unix socket", cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS), unix.EPERM},
		{"length past the buffer", cmsg(unix.SOL_IP, unix.IP_TTL)[:unix.SizeofCmsghdr+2], unix.EINVAL},
	} {
		c2 := &sendCall{domain: unix.AF_INET, pidfd: -1}
		if got := c2.control(&outMsg{ctrl: c.ctrl}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A connect box makes on the sandbox's behalf may block (a listener whose backlog is
// full): the supervisor still answers the sandbox's other notifications meanwhile. A
// thread under the filter starts a process (which inherits it, and waits), fills the
// backlog of a profile-named socket, and blocks in a second connect; once box's own
// connect is blocked too, the process connects a UDP socket (stopped, and answered by
// box) and sends a datagram, which must arrive.
func TestSockGuardAnswersWhileConnectBlocks(t *testing.T) {
	if err := UnixNotifySupport(); err != nil {
		t.Skip(err) // the live tests require it
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "full.sock")
	lfd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(lfd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 0); err != nil { // one pending connection; the next waits
		t.Fatal(err)
	}
	lClosed := false
	closeListener := func() {
		if !lClosed {
			unix.Close(lfd)
			lClosed = true
		}
	}
	defer closeListener()
	udpSrv, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udpSrv.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer goW.Close()
	g := newSockGuard(UnixSockets{Mediate: true, Allowed: []string{path}})
	script := "read x; echo answered > /dev/udp/127.0.0.1/" + strconv.Itoa(udpSrv.LocalAddr().(*net.UDPAddr).Port)
	installed := make(chan error, 1)
	ended := make(chan error, 1)
	var child int
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its filter
		if err := g.install(); err != nil {
			installed <- err
			return
		}
		pid, err := syscall.ForkExec(bash, []string{"bash", "-c", script}, &syscall.ProcAttr{Files: []uintptr{goR.Fd(), 1, 2}})
		child = pid
		installed <- err
		if err != nil {
			return
		}
		first, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		defer unix.Close(first)
		if err := unix.Connect(first, &unix.SockaddrUnix{Name: path}); err != nil {
			ended <- err
			return
		}
		s, _ := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		defer unix.Close(s)
		unix.Connect(s, &unix.SockaddrUnix{Name: path}) // blocks until the listener closes
		ended <- nil
	}()
	if err := <-installed; err != nil {
		t.Fatal(err)
	}
	goR.Close()
	defer func() {
		var ws syscall.WaitStatus
		syscall.Wait4(child, &ws, 0, nil)
	}()
	if err := g.begin(^uint64(0)); err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	// Two threads of this process in connect: the filtered one, waiting for box's answer,
	// and box's, blocked on the full backlog.
	deadline := time.Now().Add(time.Minute)
	for inConnect() < 2 {
		select {
		case err := <-ended:
			t.Fatalf("the second connect did not block: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("box's connect never blocked on the full backlog")
		}
		time.Sleep(time.Millisecond) // polls a condition: there is no event to wait on
	}
	goW.Write([]byte("go\n"))
	udpSrv.SetReadDeadline(time.Now().Add(time.Minute))
	b := make([]byte, 64)
	n, _, err := udpSrv.ReadFrom(b)
	if err != nil || strings.TrimSpace(string(b[:n])) != "answered" {
		t.Errorf("the process's UDP connect and send while box's connect blocked: read %q, %v", b[:n], err)
	}
	closeListener()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}

// inConnect counts this process's threads in connect(2).
func inConnect() int {
	tasks, _ := os.ReadDir("/proc/self/task")
	n := 0
	for _, tk := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + tk.Name() + "/syscall")
		if err == nil && strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_CONNECT)+" ") {
			n++
		}
	}
	return n
}
