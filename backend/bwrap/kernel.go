package bwrap

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/internal/rawread"
	"golang.org/x/sys/unix"
)

// What Run does to the process around the launch, each closing a way out of the sandbox
// the kernel would otherwise leave open. Protections can be switched off only in a
// test build (unsafe_boxunsafe.go), so the drill can be shown to catch each one.
const (
	ProtFDs      = "fds"      // inherited fds marked close-on-exec
	ProtKeyring  = "keyring"  // a fresh session keyring
	ProtSeccomp  = "seccomp"  // the syscall filter
	ProtTerminal = "terminal" // terminal modes restored
	// ProtOSCAllow: the relay passes only ttyfilter's allowedOSC (off: every OSC but droppedOSC).
	ProtOSCAllow = "osc-allowlist"
	// ProtKernelMounts refuses profile mounts of kernel interfaces (policy.KernelPaths).
	ProtKernelMounts = "kernelmounts"
	// ProtAbstract scopes abstract unix sockets (Landlock) where the sandbox shares the
	// host's network namespace (tier full).
	ProtAbstract = "abstract"
	// ProtSysV: System V IPC of the sandbox's own (bwrap's IPC namespace; the Landlock
	// mode's filter refusing it).
	ProtSysV = "sysv"
)

// protectionOff reports whether a test build switched protection name off.
var protectionOff = func(name string) bool { return false }

// closeInherited marks every fd above 2 close-on-exec, so only stdio and the fds Run
// places on purpose (dup2 clears the flag on those) reach bwrap and the command. box
// opens its own fds close-on-exec; the ones it inherited (an IDE's, a terminal's, an
// agent harness's, `exec 7</home/u`) would otherwise pass straight into the sandbox.
//
// close_range(CLOSE_RANGE_CLOEXEC) needs Linux 5.11; before that, each fd listed in
// /proc/self/fd is marked with fcntl.
func closeInherited() error {
	if protectionOff(ProtFDs) {
		return nil
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return nil
	} else if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("marking inherited fds close-on-exec: %w", err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing inherited fds: %w", err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		// The directory's own fd is gone by now (EBADF): nothing to mark.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("marking fd %d close-on-exec: %w", fd, err)
		}
	}
	return nil
}

// allowAll is a filter that refuses nothing: struct sock_filter {BPF_RET|BPF_K, 0, 0,
// SECCOMP_RET_ALLOW}, for a test build with the filter switched off.
var allowAll = []byte{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f}

// programFile holds the compiled filter in a memfd for bwrap to read (a pipe could
// hold only 64 KiB before the launch blocked).
func programFile(prog []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("box-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "box-seccomp")
	if _, err := f.Write(prog); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	return f, nil
}

// terminals are the modes of the terminals on stdio before the launch.
type terminals []savedTerm

type savedTerm struct {
	fd    int
	modes unix.Termios
	// excl is TIOCEXCL's state: set, every later open of the terminal (the operator's
	// sudo, ssh and pinentry prompts, less reading /dev/tty) fails with EBUSY. ldisc is
	// the line discipline. Neither is a termios mode; both outlive the sandbox (so does
	// suspended output, which restore resumes).
	excl, ldisc int
}

// saveTerminals records the modes of each distinct terminal among fds.
func saveTerminals(fds []uintptr) terminals {
	if protectionOff(ProtTerminal) {
		return nil
	}
	var out terminals
	seen := map[uint64]bool{}
	for _, fd := range fds {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || seen[st.Rdev] {
			continue
		}
		seen[st.Rdev] = true
		excl, _ := unix.IoctlGetInt(int(fd), unix.TIOCGEXCL)
		ldisc, _ := unix.IoctlGetInt(int(fd), unix.TIOCGETD)
		out = append(out, savedTerm{int(fd), *t, excl, ldisc})
	}
	return out
}

// restore puts back the saved modes where the sandbox changed them (`stty -echo`, a
// raw-mode program killed mid-way). SIGTTOU is blocked meanwhile (withoutTTOU): box
// may be in the background, and no part of the restore may stop it.
func (ts terminals) restore() { withoutTTOU(ts.restoreEach) }

func (ts terminals) restoreEach() {
	for _, t := range ts {
		if excl, err := unix.IoctlGetInt(t.fd, unix.TIOCGEXCL); err == nil && excl != t.excl {
			req := uint(unix.TIOCNXCL)
			if t.excl != 0 {
				req = unix.TIOCEXCL
			}
			_ = unix.IoctlSetInt(t.fd, req, 0)
		}
		if ld, err := unix.IoctlGetInt(t.fd, unix.TIOCGETD); err == nil && ld != t.ldisc {
			_ = unix.IoctlSetPointerInt(t.fd, unix.TIOCSETD, t.ldisc)
		}
		// Output suspended inside (tcflow TCOOFF, as Ctrl-S does) stays suspended: the
		// next write to the terminal, your shell's prompt, would hang. Resumed always
		// (a no-op when it runs).
		_ = unix.IoctlSetInt(t.fd, unix.TCXONC, unix.TCOON)
		now, err := unix.IoctlGetTermios(t.fd, unix.TCGETS)
		if err != nil || *now == t.modes {
			continue
		}
		_ = unix.IoctlSetTermios(t.fd, unix.TCSETS, &t.modes)
	}
}

// bwrapProc is the running bwrap: box's child.
type bwrapProc struct {
	pid    int
	pidfd  int // -1 when pidfd_open is unavailable
	done   chan struct{}
	status syscall.WaitStatus // valid once done is closed
}

// spawn forks bwrap from a thread of its own, which first joins a new, empty session
// keyring: the sandbox inherits that one instead of the operator's (Kerberos caches,
// AFS tokens). The thread stays locked and is never unlocked, so the runtime ends it
// (and its keyring reference) with the goroutine; it lives until bwrap exits, because
// bwrap's --die-with-parent watches the thread that forked it, not the process.
//
// With scopeAbstract the thread also enters a Landlock domain that scopes abstract
// unix sockets (scopeAbstractSockets), which bwrap and the sandbox inherit.
//
// The wait is for exit only: a stopped bwrap is resumed, never taken for an ended one.
func spawn(path string, argv []string, attr *syscall.ProcAttr, scopeAbstract bool, socks *sockGuard) (*bwrapProc, error) {
	p := &bwrapProc{pidfd: -1, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if !protectionOff(ProtKeyring) {
			if err := joinNewSessionKeyring(); err != nil {
				started <- err
				return
			}
		}
		if scopeAbstract && !protectionOff(ProtAbstract) {
			if err := scopeAbstractSockets(); err != nil {
				started <- err
				return
			}
		}
		if err := socks.install(); err != nil {
			started <- err
			return
		}
		pid, err := syscall.ForkExec(path, argv, attr)
		if err != nil {
			started <- err
			return
		}
		p.pid = pid
		// Opened before anything reaps bwrap, so it can only ever name this process.
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			p.pidfd = fd
		}
		started <- nil
		for {
			_, err := syscall.Wait4(pid, &p.status, syscall.WUNTRACED, nil)
			if err == syscall.EINTR {
				continue
			}
			if err == nil && p.status.Stopped() {
				// Nothing in the sandbox can stop bwrap (another pid namespace); a stray
				// SIGSTOP from outside would hold the sandbox's end forever.
				p.signal(unix.SIGCONT)
				continue
			}
			break
		}
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *bwrapProc) signal(s unix.Signal) {
	if p.pidfd >= 0 {
		_ = unix.PidfdSendSignal(p.pidfd, s, nil, 0)
	} else {
		_ = unix.Kill(p.pid, s) // not reaped yet (only spawn's goroutine reaps it)
	}
}

func (p *bwrapProc) kill() { p.signal(unix.SIGKILL) }

func (p *bwrapProc) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// joinNewSessionKeyring gives the calling thread a new anonymous session keyring. A NULL
// name: a named one would be joined by every sandbox that asked for the same name.
// Without keyring support in the kernel there is nothing to share, and nothing to do.
func joinNewSessionKeyring() error {
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if e != 0 && e != unix.ENOSYS {
		return fmt.Errorf("a new session keyring for the sandbox: %w", e)
	}
	return nil
}

// procStat reads fields of /proc/PID/stat after the command name: index 0 is the state
// (field 3 of proc(5)).
func procStat(pid int) ([]string, error) {
	b, err := rawread.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	return strings.Fields(s[i+1:]), nil
}
