package bwrap

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

// A published port whose server in the sandbox does not take the connection (its
// listener's queue full: a backlog of 0 never accepted, or a server too busy to) must not
// hold box: the forwarder's connect to it waits in the poller and ends when the forwarder
// closes. Before, the connect was a blocking system call on the helper's socket: it took
// an OS thread through the SYN retries (about two minutes by default) and close waited
// for it, so box's exit did too (a hostile review). The sandbox stands as a lab namespace
// whose SYN retries are raised to the kernel's maximum, so a connect that is not ended
// never ends within the test; box's side is the forwarder as box runs it, its helper an
// in-process stand-in that hands out sockets of that namespace as ForwardMain does.
func TestForwarderCloseEndsPendingConnect(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range lab.Tools {
		testenv.RequireTool(t, tool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := lab.New(t)
	ns, err := l.AddNS(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := l.Command(ctx, "sandbox", "sh", "-c", "echo 127 > /proc/sys/net/ipv4/tcp_syn_retries").CombinedOutput(); err != nil {
		t.Fatalf("tcp_syn_retries: %v %s", err, out)
	}
	// The sandbox's server: a backlog of 0, one connection queued and never accepted.
	var lfd, port int
	if err := lab.InNetns(ns, func() error {
		var err error
		if lfd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return err
		}
		if err := unix.Listen(lfd, 0); err != nil {
			return err
		}
		sa, err := unix.Getsockname(lfd)
		if err != nil {
			return err
		}
		port = sa.(*unix.SockaddrInet4).Port
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	queued, err := lab.Dialer(ns)(ctx, "tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer queued.Close()

	// The helper's stand-in: each request byte answered with a fresh blocking TCP socket
	// of the sandbox's namespace, as ForwardMain makes them.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	helperEnd := fds[1]
	defer unix.Close(helperEnd)
	go func() {
		req := make([]byte, 1)
		for {
			if n, err := unix.Read(helperEnd, req); n == 0 || err != nil {
				return
			}
			var s int
			if err := lab.InNetns(ns, func() (err error) {
				s, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				return err
			}); err != nil {
				unix.Write(helperEnd, []byte("no"))
				continue
			}
			unix.Sendmsg(helperEnd, []byte("ok"), unix.UnixRights(s), nil, 0)
			unix.Close(s)
		}
	}()
	f := &forwarder{conns: map[net.Conn]bool{}, pool: make(chan int, socketPool), quit: make(chan struct{}),
		slots: make(chan struct{}, maxForwardConns), pair: os.NewFile(uintptr(fds[0]), "forward")}
	front, err := lab.Listen(l.HostNS(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.pub = []publisher{{lns: []net.Listener{front}}}
	f.serve(front, func(c net.Conn) { f.toSandbox(c, uint16(port)) })

	client, err := lab.Dialer(l.HostNS())(ctx, "tcp4", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// The forwarder's connect is under way once the sandbox's namespace holds a socket in
	// SYN-SENT to the server's port.
	synSent := fmt.Sprintf(" 0100007F:%04X 02 ", port)
	for {
		var tcp []byte
		if err := lab.InNetns(ns, func() (err error) {
			tcp, err = os.ReadFile("/proc/thread-self/net/tcp")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(tcp), synSent) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the forwarder never connected to the sandbox's port:\n%s", tcp)
		case <-time.After(10 * time.Millisecond): // waiting for the condition above, not a delay
		}
	}
	closed := make(chan struct{})
	go func() { f.close(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("close waited for a connect the sandbox's server never completes")
	}
	client.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the host's client after close: %d bytes, %v; want EOF", n, err)
	}
}
