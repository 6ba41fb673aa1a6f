package bwrap_test

// A minimal splice proxy for BenchmarkPublish: the ceiling any forwarder of box's shape
// (a process of its own holding both sockets, io.Copy between them, which is splice(2))
// can reach on this machine. It runs as a process of its own, as box's forwarder does,
// so it competes for the CPUs as box does; it is this test binary started again with
// spliceProxyEnv set (TestMain).

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
)

// spliceProxyEnv carries the proxy's target: "NETNS-PATH ADDR" (its listener is fd 3).
const spliceProxyEnv = "BOX_TEST_SPLICE_PROXY"

func TestMain(m *testing.M) {
	if target := os.Getenv(spliceProxyEnv); target != "" {
		if err := spliceProxy(target); err != nil {
			fmt.Fprintln(os.Stderr, "splice proxy:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// spliceProxy accepts on fd 3 and carries each connection to addr, dialled in the
// network namespace at ns: io.Copy both ways, half-closes passed on, nothing else.
func spliceProxy(target string) error {
	ns, addr, ok := strings.Cut(target, " ")
	if !ok {
		return fmt.Errorf("%s=%q: want NETNS ADDR", spliceProxyEnv, target)
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	dial := lab.Dialer(ns)
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			d, err := dial(context.Background(), "tcp4", addr)
			if err != nil {
				return
			}
			defer d.Close()
			done := make(chan struct{})
			go func() { io.Copy(c, d); c.(*net.TCPConn).CloseWrite(); close(done) }()
			io.Copy(d, c)
			d.(*net.TCPConn).CloseWrite()
			<-done
		}()
	}
}

// startSpliceProxy starts the proxy on the lab host's 127.0.0.1:port, to addr in ns.
func startSpliceProxy(tb testing.TB, l *lab.Lab, port int, ns, addr string) {
	tb.Helper()
	ln, err := lab.Listen(l.HostNS(), "tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		tb.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	c := exec.Command(os.Args[0])
	c.Env = append(os.Environ(), spliceProxyEnv+"="+ns+" "+addr)
	c.ExtraFiles = []*os.File{f}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Process.Kill(); c.Wait() })
}

// cpuTime is the user and system time pid has used (from /proc; clock ticks of 10 ms):
// 0 for pid 0 or a process that is gone.
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
