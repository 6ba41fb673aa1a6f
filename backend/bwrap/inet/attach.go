package inet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsGetUserns is ioctl NS_GET_USERNS: a namespace fd -> an fd of its owning user namespace.
const nsGetUserns = 0xb701

// Fixed descriptor numbers in the helpers (exec.Cmd.ExtraFiles start at 3).
const (
	fdUserns = 3 // user namespace owning the sandbox's netns
	fdNetns  = 4 // the sandbox's netns
	fdExe    = 5 // filter helper: this binary; slirp4netns: --exit-fd
	fdReady  = 6 // slirp4netns: --ready-fd
)

// DefaultLinkTimeout bounds how long Attach waits for the helper's link when ctx has no
// deadline.
const DefaultLinkTimeout = 10 * time.Second

// HelperArgv is the helper's command line (without the program) for a sandbox whose
// user namespace and netns are at fds 3 and 4. Pure.
//
// No port is forwarded either way, the host's loopback is not mapped, IPv4 only; DNS is
// answered at ResolverAddr(h).
func HelperArgv(h Helper) []string {
	fd := func(n int) string { return "/proc/self/fd/" + strconv.Itoa(n) }
	switch h {
	case Pasta:
		return []string{
			"--config-net", "--quiet", "--foreground", "--stderr",
			"--no-map-gw", "--ipv4-only",
			"--tcp-ports", "none", "--udp-ports", "none", "--tcp-ns", "none", "--udp-ns", "none",
			"--dns-forward", PastaResolver.String(),
			"--userns", fd(fdUserns), "--netns", fd(fdNetns),
			// The netns is given as an fd path, not a bind mount pasta could watch; its
			// lifetime is the Session's (Close kills pasta).
			"--no-netns-quit",
		}
	case Slirp4netns:
		return []string{
			"--configure", "--mtu=65520", "--disable-host-loopback",
			// No --enable-sandbox: it needs setegid(0) in the user namespace, which
			// fails in bwrap's (measured).
			"--enable-seccomp",
			"--userns-path=" + fd(fdUserns), "--netns-type=path",
			"--exit-fd=" + strconv.Itoa(fdExe), "--ready-fd=" + strconv.Itoa(fdReady),
			fd(fdNetns), "tap0",
		}
	}
	return nil
}

// FilterArgv is the command line that runs the filter helper in the sandbox's user
// namespace and netns (fds 3 and 4), as that namespace's root. Pure.
func FilterArgv(filterCmd []string, netnsIno uint64, wait time.Duration) []string {
	return nsenterArgv(filterCmd, filterFlags(netnsIno, wait))
}

func filterFlags(netnsIno uint64, wait time.Duration) []string {
	return []string{"-netns-ino=" + strconv.FormatUint(netnsIno, 10), "-wait-link=" + wait.String()}
}

// nsenterArgv runs filterCmd with args in the user namespace and netns at fds 3 and 4.
func nsenterArgv(filterCmd, args []string) []string {
	// --preserve-credentials: the user namespace denies setgroups (so nsenter's switch to
	// uid 0 fails), and our uid already is 0 there when bwrap maps it so (--dev).
	argv := []string{"--user=/proc/self/fd/" + strconv.Itoa(fdUserns), "--net=/proc/self/fd/" + strconv.Itoa(fdNetns), "--preserve-credentials", "--"}
	return append(append(argv, filterCmd...), args...)
}

// Session is an attached internet tier: the running helper. Close it when the sandbox
// ends.
type Session struct {
	Helper Helper
	// HelperPid is the helper's pid (the one process Attach leaves running).
	HelperPid int

	helper    *exec.Cmd
	done      chan struct{} // closed when the helper exited
	stderr    *tailBuffer
	files     []*os.File
	closeOnce sync.Once
}

// ResolvConf is the resolv.conf the sandbox must see at /etc/resolv.conf.
func (s *Session) ResolvConf() string { return ResolvConf(s.Helper) }

// EndedEarly reports whether the helper has already exited, and how (its exit status and
// the last of its output). Asked before Close, which kills it: a helper that ended while
// the sandbox ran left it without a network from then on (nothing more: the filter stays
// in its namespace), and the operator is told (a hostile review found the end unseen).
func (s *Session) EndedEarly() (bool, string) {
	if s == nil || s.done == nil {
		return false, ""
	}
	select {
	case <-s.done:
		return true, s.helperErr()
	default:
		return false, ""
	}
}

// Close kills the helper (by pid) and releases the namespace fds. Idempotent.
func (s *Session) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		if s.helper != nil && s.helper.Process != nil {
			s.helper.Process.Kill()
			<-s.done
		}
		for _, f := range s.files {
			f.Close()
		}
	})
	return nil
}

// Attach gives the sandbox whose first process is childPid (bwrap's info-fd "child-pid")
// user-mode networking and installs the egress filter in its netns. When it returns nil
// the filter is in place and the link is up: only then may the caller release the
// sandbox. On error nothing it started is left running and the sandbox's first process
// (childPid) has been sent SIGKILL; the caller must still kill bwrap.
func Attach(ctx context.Context, childPid int, opts Options) (s *Session, err error) {
	opts, err = opts.Resolve()
	if err != nil {
		return nil, err
	}
	// Fail closed even if the caller forgets: bwrap's child blocked on --block-fd runs
	// the command unfiltered once that fd reads EOF (when the caller exits), and killing
	// bwrap's own process does not kill it. Killing the sandbox's pid 1 ends it.
	pidfd, err := unix.PidfdOpen(childPid, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox pid %d: %w", childPid, err)
	}
	defer unix.Close(pidfd)
	s = &Session{Helper: opts.Helper}
	defer func() {
		if err != nil {
			unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			s.Close()
			s = nil
		}
	}()
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", childPid))
	if err != nil {
		return nil, fmt.Errorf("sandbox pid %d: %w", childPid, err)
	}
	s.files = append(s.files, netns)
	var st, own unix.Stat_t
	if err := unix.Fstat(int(netns.Fd()), &st); err != nil {
		return nil, fmt.Errorf("stat netns of pid %d: %w", childPid, err)
	}
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		return nil, fmt.Errorf("stat own netns: %w", err)
	}
	if st.Ino == own.Ino && st.Dev == own.Dev {
		return nil, fmt.Errorf("pid %d shares box's network namespace (hint: bwrap needs --unshare-net)", childPid)
	}
	userns, err := ioctlUserns(netns)
	if err != nil {
		return nil, fmt.Errorf("owner of netns of pid %d: %w", childPid, err)
	}
	s.files = append(s.files, userns)

	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultLinkTimeout)
		defer cancel()
	}
	if err := waitMapped(ctx, childPid); err != nil {
		return nil, err
	}
	if err := s.startHelper(opts, userns, netns); err != nil {
		return nil, err
	}
	if err := s.runFilter(ctx, opts, userns, netns, st.Ino); err != nil {
		return nil, err
	}
	select {
	case <-s.done:
		return nil, fmt.Errorf("%s exited during setup: %s", opts.Helper, s.helperErr())
	default:
	}
	return s, nil
}

func (s *Session) startHelper(opts Options, userns, netns *os.File) error {
	cmd := exec.Command(opts.HelperPath, HelperArgv(opts.Helper)...)
	cmd.ExtraFiles = []*os.File{userns, netns}
	if opts.Helper == Slirp4netns {
		// slirp4netns exits when the exit fd's other end closes: with this process, or
		// at Close. The ready fd is not read: the filter helper waits for the link.
		exitR, exitW, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("exit pipe: %w", err)
		}
		readyR, readyW, err := os.Pipe()
		if err != nil {
			exitR.Close()
			exitW.Close()
			return fmt.Errorf("ready pipe: %w", err)
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, exitR, readyW)
		defer exitR.Close()
		defer readyW.Close()
		s.files = append(s.files, exitW, readyR)
	}
	stderr := &tailBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", opts.HelperPath, err)
	}
	s.helper, s.HelperPid = cmd, cmd.Process.Pid
	s.stderr = stderr
	s.done = make(chan struct{})
	go func() {
		cmd.Wait()
		close(s.done)
	}()
	return nil
}

func (s *Session) helperErr() string {
	msg := s.stderr.String()
	if st := s.helper.ProcessState; st != nil {
		msg = strings.TrimSpace(st.String() + ": " + msg)
	}
	return msg
}

func (s *Session) runFilter(ctx context.Context, opts Options, userns, netns *os.File, ino uint64) error {
	rs := Plan(opts)
	js, err := json.Marshal(rs)
	if err != nil {
		return fmt.Errorf("encode ruleset: %w", err)
	}
	// Leave the helper time to report before ctx kills it, so the error says why: a
	// tenth of what is left, but at least a second (a loaded host is slow to start the
	// filter process and read its answer) and never more than half.
	wait := DefaultLinkTimeout
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		wait = max(left-max(left/10, time.Second), left/2, 10*time.Millisecond)
	}
	// Stop waiting for the link as soon as the helper dies.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	out, err := opts.runHelper(ctx, userns, netns, filterFlags(ino, wait), js)
	if err != nil {
		select {
		case <-s.done:
			return fmt.Errorf("%s exited during setup: %s", opts.Helper, s.helperErr())
		default:
		}
		msg := out
		if ctx.Err() != nil {
			msg = strings.TrimSpace(msg + " " + ctx.Err().Error())
		}
		hint := ""
		switch {
		case strings.Contains(msg, "not permitted"):
			hint = " (hint: this user must be uid 0 in bwrap's outer user namespace: pass --dev to bwrap)"
		case strings.Contains(msg, "unknown") || strings.Contains(msg, "flag provided but not defined"):
			hint = " (hint: the binary must dispatch `" + FilterSubcommand + "` to inet.FilterMain)"
		}
		return fmt.Errorf("install egress filter: %w: %s%s", err, msg, hint)
	}
	return nil
}

// tailBuffer keeps the last max bytes written, without the helpers' syslog complaints.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keep []string
	for _, l := range strings.Split(string(t.b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Failed to send") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "; ")
}

// ioctlUserns returns the user namespace that owns the namespace open as ns.
func ioctlUserns(ns *os.File) (*os.File, error) {
	fd, err := unix.IoctlRetInt(int(ns.Fd()), nsGetUserns)
	if err != nil {
		return nil, fmt.Errorf("NS_GET_USERNS: %w", err)
	}
	return os.NewFile(uintptr(fd), "userns"), nil
}

// waitMapped waits until bwrap's child has written its user namespace's uid and gid maps.
// bwrap reports the child pid on --info-fd right after clone, before the child maps
// itself; a process entering the namespace before that is nobody there, without
// capabilities.
func waitMapped(ctx context.Context, pid int) error {
	for {
		u, uerr := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
		g, gerr := os.ReadFile(fmt.Sprintf("/proc/%d/gid_map", pid))
		if uerr != nil || gerr != nil {
			return fmt.Errorf("sandbox pid %d: %w", pid, errors.Join(uerr, gerr))
		}
		if len(bytes.TrimSpace(u)) > 0 && len(bytes.TrimSpace(g)) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox pid %d never mapped its user namespace: %w", pid, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}
