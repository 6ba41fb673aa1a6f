package inet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/heavy-duty/box/policy"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AllowOptions configure the allowlist tier.
type AllowOptions struct {
	Allow *Allowlist
	Log   *Log
	// NsenterPath and FilterCommand as in Options.
	NsenterPath   string
	FilterCommand []string
	// HostAddrs are never dialled (pass HostAddrs()); Blocked ranges neither (nil: Blocked).
	HostAddrs []netip.Addr
	Blocked   []netip.Prefix
	// HostNets are never dialled (pass HostNets() and HostRoutes()).
	HostNets []netip.Prefix
	// Lookup and Dial as in Proxy (nil: the host's resolver, a plain dialer).
	Lookup func(ctx context.Context, name string) ([]netip.Addr, error)
	Dial   func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// SSH and SSHAnyAddress as in Proxy.
	SSH           []SSHHost
	SSHAnyAddress bool
	// SearchLookup as in Proxy (test builds only).
	SearchLookup bool
}

// AllowResolvConf is the /etc/resolv.conf of an allowlist sandbox: box's DNS on loopback.
const AllowResolvConf = "nameserver 127.0.0.1\noptions edns0\n"

// AllowSession is an attached allowlist tier: the proxy and DNS serving the sockets that
// live in the sandbox's netns. Close it when the sandbox ends.
type AllowSession struct {
	Proxy *Proxy

	ln        net.Listener
	pc        net.PacketConn
	control   net.Listener
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// AttachAllow gives the sandbox whose first process is childPid (bwrap --unshare-net,
// blocked on its block fd) the allowlist tier: the setup helper puts the table and the
// route in its netns and hands box the listening sockets, and box starts serving them.
// When it returns nil the sandbox may be released. On error the sandbox's pid 1 has been
// sent SIGKILL and nothing is left running; the caller must still kill bwrap.
func AttachAllow(ctx context.Context, childPid int, opts AllowOptions) (s *AllowSession, err error) {
	if opts.Allow == nil {
		return nil, errors.New("allowlist tier: no allowlist")
	}
	if opts.NsenterPath == "" {
		if opts.NsenterPath, err = exec.LookPath("nsenter"); err != nil {
			return nil, fmt.Errorf("allowlist tier: nsenter: %w (hint: install util-linux)", err)
		}
	}
	pidfd, err := unix.PidfdOpen(childPid, 0)
	if err != nil {
		return nil, fmt.Errorf("allowlist tier: sandbox pid %d: %w", childPid, err)
	}
	defer unix.Close(pidfd)
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
		if err != nil {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
	}()
	netns, userns, ino, err := sandboxNamespaces(childPid)
	if err != nil {
		return nil, fmt.Errorf("allowlist tier: %w", err)
	}
	files = append(files, netns, userns)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultLinkTimeout)
		defer cancel()
	}
	if err := waitMapped(ctx, childPid); err != nil {
		return nil, err
	}
	mine, theirs, err := socketpair()
	if err != nil {
		return nil, fmt.Errorf("allowlist tier: %w", err)
	}
	files = append(files, mine)
	js, err := json.Marshal(AllowPlan())
	if err != nil {
		theirs.Close()
		return nil, err
	}
	opt := Options{NsenterPath: opts.NsenterPath, FilterCommand: opts.FilterCommand}
	out, err := opt.runHelper(ctx, userns, netns, []string{"-netns-ino=" + strconv.FormatUint(ino, 10), "-allowlist"}, js, theirs)
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("allowlist tier: set up the sandbox's network: %w: %s", err, out)
	}
	ln, pc, err := receiveSockets(mine)
	if err != nil {
		return nil, fmt.Errorf("allowlist tier: %w", err)
	}
	blocked := opts.Blocked
	if blocked == nil {
		blocked = Blocked
	}
	s = &AllowSession{ln: ln, pc: pc, Proxy: &Proxy{
		Allow: opts.Allow, Log: opts.Log, Blocked: blocked, HostAddrs: opts.HostAddrs, HostNets: opts.HostNets,
		Lookup: opts.Lookup, Dial: opts.Dial, SSH: opts.SSH, SSHAnyAddress: opts.SSHAnyAddress, SearchLookup: opts.SearchLookup,
	}}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.Proxy.Serve(ln) }()
	go func() { defer s.wg.Done(); s.Proxy.ServeDNS(pc) }()
	return s, nil
}

// sandboxNamespaces opens the netns of pid (refusing box's own) and its owning userns.
func sandboxNamespaces(pid int) (netns, userns *os.File, ino uint64, err error) {
	netns, err = os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("sandbox pid %d: %w", pid, err)
	}
	var st, own unix.Stat_t
	if err := unix.Fstat(int(netns.Fd()), &st); err != nil {
		netns.Close()
		return nil, nil, 0, fmt.Errorf("stat netns of pid %d: %w", pid, err)
	}
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		netns.Close()
		return nil, nil, 0, fmt.Errorf("stat own netns: %w", err)
	}
	if st.Ino == own.Ino && st.Dev == own.Dev {
		netns.Close()
		return nil, nil, 0, fmt.Errorf("pid %d shares box's network namespace (hint: bwrap needs --unshare-net)", pid)
	}
	userns, err = ioctlUserns(netns)
	if err != nil {
		netns.Close()
		return nil, nil, 0, fmt.Errorf("owner of netns of pid %d: %w", pid, err)
	}
	return netns, userns, st.Ino, nil
}

// runHelper runs the filter helper (this binary's FilterSubcommand unless FilterCommand
// says otherwise) inside userns and netns as that namespace's root, with args, stdin and
// extra descriptors from fd 6 on; it returns the helper's output, trimmed.
func (o Options) runHelper(ctx context.Context, userns, netns *os.File, args []string, stdin []byte, extra ...*os.File) (string, error) {
	filterCmd := o.FilterCommand
	files := []*os.File{userns, netns}
	if len(filterCmd) == 0 {
		// Open the running binary itself: nsenter's /proc/self/exe would be nsenter.
		exe, err := os.Open("/proc/self/exe")
		if err != nil {
			return "", fmt.Errorf("open own binary: %w", err)
		}
		defer exe.Close()
		files = append(files, exe)
		filterCmd = []string{"/proc/self/fd/" + strconv.Itoa(fdExe), FilterSubcommand}
	} else {
		files = append(files, nil) // keep fd 6 for extra
	}
	if len(extra) > 0 {
		files = append(files, extra...)
	}
	cmd := exec.CommandContext(ctx, o.NsenterPath, nsenterArgv(filterCmd, args)...)
	cmd.ExtraFiles = files
	cmd.Stdin = bytes.NewReader(stdin)
	out := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

// Close stops serving: the sandbox's connections fail from now on. Idempotent.
func (s *AllowSession) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		s.ln.Close()
		s.pc.Close()
		if s.control != nil {
			s.control.Close()
		}
		s.Proxy.Close()
		s.wg.Wait()
	})
	return nil
}

// ServeControl accepts operator requests on ln (a unix socket outside the sandbox) until
// the session closes. The protocol is one line per request, "allow ENTRY", answered
// "ok ADDED..." or "error MESSAGE"; every change is logged.
func (s *AllowSession) ServeControl(ln net.Listener) {
	s.control = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil {
					return
				}
				fmt.Fprintln(c, s.control1(strings.TrimSpace(line)))
			}()
		}
	}()
}

func (s *AllowSession) control1(line string) string {
	entry, ok := strings.CutPrefix(line, "allow ")
	if !ok {
		return "error unknown request (want: allow ENTRY)"
	}
	ps, err := policy.ParseAllow([]string{strings.TrimSpace(entry)})
	if err != nil {
		return "error " + err.Error()
	}
	added := s.Proxy.Allow.Add(ps...)
	names := make([]string, len(added))
	for i, p := range added {
		names[i] = p.String()
		s.Proxy.Log.Record(Event{Kind: EventAllowed, Name: p.String(), Reason: "by the operator, live"})
	}
	if len(added) == 0 {
		return "ok (already allowed)"
	}
	return "ok " + strings.Join(names, " ")
}

// AllowLive asks the running sandbox whose control socket is path to allow entry.
func AllowLive(path, entry string) (string, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "allow %s\n", entry); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no answer: %w", err)
	}
	line = strings.TrimSpace(line)
	if msg, bad := strings.CutPrefix(line, "error "); bad {
		return "", errors.New(msg)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "ok")), nil
}
