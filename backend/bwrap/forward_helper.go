package bwrap

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/backend/bwrap/inet"
	"golang.org/x/sys/unix"
)

// ForwardSubcommand is the hidden box subcommand box starts (through nsenter) in a
// sandbox's user and network namespaces, before the command is released: ForwardMain.
const ForwardSubcommand = "__forward"

// fdForward is the helper's end of the socketpair to box (after userns, netns, exe).
const fdForward = 6

// The helper's protocol on fdForward. It first sends "ok" with the listeners it bound
// on HostAlias, one per -host-ports entry in order. With -serve it then answers each
// request byte (reqSocket4, reqSocket6) with one fresh, unconnected TCP socket of the
// sandbox's namespace: a socket belongs to the namespace it was made in, so box connects
// it to the sandbox's loopback from outside. It exits when box closes its end.
const (
	reqSocket4 = '4'
	reqSocket6 = '6'
)

// ForwardMain is the helper. Exit codes: 0 box closed its end, 1 a failure (said on
// stderr, which box reads).
func ForwardMain(args []string) int {
	if err := forwardMain(args); err != nil {
		fmt.Fprintf(os.Stderr, "box %s: %v\n", ForwardSubcommand, err)
		return 1
	}
	return 0
}

func forwardMain(args []string) error {
	fs := flag.NewFlagSet(ForwardSubcommand, flag.ContinueOnError)
	ports := fs.String("host-ports", "", "comma-separated ports to listen on at "+HostAlias.String())
	serve := fs.Bool("serve", false, "hand out sockets of this namespace until box closes the pair")
	widen := fs.Bool("widen", false, "a test build with ports off: every port of "+HostAlias.String()+" reaches the host")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var fds []int
	if *ports != "" {
		for _, s := range strings.Split(*ports, ",") {
			n, err := strconv.ParseUint(s, 10, 16)
			if err != nil || n == 0 {
				return fmt.Errorf("-host-ports: %q", s)
			}
			ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: HostAlias.AsSlice(), Port: int(n)})
			if err != nil {
				return fmt.Errorf("listen on %s:%d inside the sandbox: %w", HostAlias, n, err)
			}
			f, err := ln.File()
			if err != nil {
				return err
			}
			fds = append(fds, int(f.Fd()))
		}
	}
	if *widen {
		fd, err := widenHostPorts()
		if err != nil {
			return err
		}
		fds = append(fds, fd)
	}
	var rights []byte
	if len(fds) > 0 {
		rights = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(fdForward, []byte("ok"), rights, nil, 0); err != nil {
		return fmt.Errorf("hand the listeners to box: %w", err)
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	if !*serve {
		return nil
	}
	req := make([]byte, 1)
	for {
		n, err := unix.Read(fdForward, req)
		if n == 0 || errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read box's request: %w", err)
		}
		family := unix.AF_INET
		if req[0] == reqSocket6 {
			family = unix.AF_INET6
		}
		s, serr := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if serr != nil {
			// Said to box as an empty answer: the one connection fails, the rest go on.
			if err := unix.Sendmsg(fdForward, []byte("no"), nil, nil, 0); err != nil {
				return err
			}
			continue
		}
		err = unix.Sendmsg(fdForward, []byte("ok"), unix.UnixRights(s), nil, 0)
		unix.Close(s)
		if err != nil {
			return fmt.Errorf("hand a socket to box: %w", err)
		}
	}
}

// widenHostPorts is the breach the drill and the tests must be able to see (a test build,
// BOX_UNSAFE_OFF=ports): every TCP port of HostAlias is redirected to one more listener,
// whose connections box carries to the same port of the host's loopback.
func widenHostPorts() (int, error) {
	// A redirect in the output hook goes to 127.0.0.1 (the sandbox's own loopback).
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return -1, err
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	c, err := nftables.New()
	if err != nil {
		return -1, err
	}
	t := inet.Table{Name: "boxwiden", Chains: []inet.Chain{{Name: "redirect", NAT: true, Rules: []inet.Rule{
		{Daddr: netip.PrefixFrom(HostAlias, 32), Proto: "tcp", Verdict: inet.Redirect, ToPort: port},
	}}}}
	if err := inet.ApplyTable(c, t); err != nil {
		return -1, err
	}
	f, err := ln.File()
	if err != nil {
		return -1, err
	}
	return int(f.Fd()), nil
}
