package bwrap

// The Landlock mode's enforcement: what an unprivileged process can hold on its own where
// user namespaces cannot be had (a container, a locked-down CI runner). No namespace, no
// mount: Landlock file rights (the home and its secrets outside every rule, writes only
// beneath the working and instance directories), Landlock's TCP rules and a seccomp
// filter refusing every socket family but AF_UNIX (tier none), Landlock's scopes
// (abstract sockets, signals), box's syscall filter, rlimits and no_new_privs.
//
// isolation.go chooses the mode and wires it into the one launch sequence;
// LandlockNotHeld is what every launch in it says.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// LandlockNotHeld is what the Landlock mode cannot give, each with why: said at every
// launch in it.
var LandlockNotHeld = []string{
	"private /tmp: needs a mount namespace; /tmp is not writable instead (TMPDIR is the instance directory's)",
	"private /proc: the host's other processes of the same user and their command lines are readable in /proc (their environments, fds and memory are refused by Landlock's ptrace rule)",
	"read-only binds inside the working directory (.git/hooks, .envrc, ...): Landlock cannot take a right away beneath a directory it grants",
	"a home of its own: the home is unreadable, not replaced",
	"network tiers internet and allowlist: they need a network namespace",
	"cgroup limits: rlimits only (RLIMIT_NPROC counts all your processes)",
	"a /proc/keys of its own: it lists your keys' descriptions (a Kerberos principal, a cache's name) and sizes; their contents stay out of reach (keyctl refused, and the opt-in refused in this mode)",
	"your files' activity: inotify and fanotify watch directories Landlock keeps unreadable (the home, ~/.ssh): the names of files you open, create or change there, and when, reach the sandbox; their contents do not (Landlock does not govern watches)",
	"a terminal of its own: the command shares box's terminal (its stdio and /dev/tty), and what it writes reaches it unfiltered (clipboard writes, kitty's remote control, DECUDK); your other terminals are out of reach",
}

// landlockNotHeldSockets is said where the kernel cannot mediate unix sockets (seccomp
// user notification, Linux 5.19): Landlock itself does not govern connect on a
// socket's path before ABI 9.
var landlockNotHeldSockets = "unix socket mediation: named sockets the user can reach (/run/user/UID/bus, an ssh-agent, docker.sock, a host nix-daemon that builds and fetches on the host's network) can be connected to"

// landlockNotHeldABI is what an older Landlock (below ABI 6: no scopes) adds.
var landlockNotHeldABI = "abstract unix sockets and signals: the host's abstract sockets and your other processes can be reached (Landlock scopes need ABI 6, Linux 6.12)"

// LandlockTierError: the Landlock mode cannot give this network tier.
type LandlockTierError struct{ Tier policy.Tier }

func (e *LandlockTierError) Error() string {
	return fmt.Sprintf("the Landlock mode cannot give network tier %s (it needs a network namespace); only tier none", e.Tier)
}

// LandlockABIError: the kernel's Landlock is too old (or absent) for the mode.
type LandlockABIError struct{ Have, Need int }

func (e *LandlockABIError) Error() string {
	return fmt.Sprintf("the Landlock mode needs Landlock ABI %d (Linux 6.7: TCP rules); this kernel has %s", e.Need, landlockText(e.Have))
}

// landlockModeABI: ABI 4 adds the TCP rules tier none needs beside the socket filter.
const landlockModeABI = 4

// LandlockPlan is one launch in the Landlock mode.
type LandlockPlan struct {
	Tier      policy.Tier
	ReadOnly  []string // readable and executable beneath (absent ones are skipped)
	ReadWrite []string // every right beneath: the working and instance directories
	Devices   []string // character devices opened read-write (/dev/null, /dev/tty, ...)
	Nproc     uint64   // RLIMIT_NPROC (0: as it is)
	AddrSpace uint64   // RLIMIT_AS in bytes (0: as it is)
	// Seccomp is the syscall filter (nil: box's default, every group on).
	Seccomp *seccomp.Filter
	// Sockets mediates the command's unix sockets as in the bwrap mode (unixsock.go):
	// box's supervisor makes every connect and address-carrying send itself and refuses
	// a host socket the profile does not name. With no network namespace the sandbox
	// shares the host's, so HostNet and ScopeAbstract are set (Plan.LandlockPlan).
	Sockets UnixSockets
	// OnStart, when set, is told the command's pid once it runs.
	OnStart func(pid int)
	// OwnGroup starts the command in a process group of its own, whose id is its pid:
	// without a terminal in front of box nothing signals box's group, so box passes each
	// signal on to the command's (ForegroundTerminal).
	OwnGroup bool
}

// DefaultLandlockReadOnly are the system trees a command needs to read and run.
var DefaultLandlockReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store", "/proc", "/sys"}

// DefaultLandlockDevices are the devices a command writes; never /dev/pts, the user's
// other terminals (landlock_tty.go adds the command's own).
var DefaultLandlockDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/ptmx"}

// Landlock file rights (ABI 1..5).
const (
	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llTruncate   = 1 << 14
	llIoctlDev   = 1 << 15
	llFileRights = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev
	llConnectTCP = 1 << 1
	llBindTCP    = 1 << 0
	llScopeAll   = 1 | 2 // abstract unix sockets, signals (ABI 6)
)

// landlockHandledFS is every file right the ABI knows.
func landlockHandledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: bits 0..12
	if abi >= 2 {
		h |= 1 << 13 // REFER
	}
	if abi >= 3 {
		h |= llTruncate
	}
	if abi >= 5 {
		h |= llIoctlDev
	}
	return h
}

type landlockPathBeneath struct {
	allowed  uint64
	parentFd int32
}

// Check refuses what the mode cannot give, by name.
func (p LandlockPlan) Check(abi int) error {
	if !p.Tier.Offline() {
		return &LandlockTierError{p.Tier}
	}
	if abi < landlockModeABI {
		return &LandlockABIError{Have: abi, Need: landlockModeABI}
	}
	return nil
}

// restrictLandlock puts the calling thread (locked) in the mode's domain: no_new_privs,
// the Landlock ruleset, box's syscall filter and the socket filter. What it then forks
// inherits all of it.
//
// The socket supervisor's filter (socks, nil: none) goes on before box's syscall filter,
// as in the bwrap mode, where bwrap loads box's filter after it.
func (p LandlockPlan) restrictLandlock(abi int, socks *sockGuard) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	handled := landlockHandledFS(abi)
	attr := landlockRulesetAttr{handledAccessFS: handled, handledAccessNet: llBindTCP | llConnectTCP}
	size := unsafe.Sizeof(attr)
	if abi >= landlockScopeABI {
		attr.scoped = llScopeAll
	} else {
		size = unsafe.Offsetof(attr.scoped)
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	add := func(path string, allowed uint64, must bool) error {
		f, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if !must && errors.Is(err, unix.ENOENT) {
				return nil
			}
			return fmt.Errorf("landlock rule %s: %w", path, err)
		}
		defer unix.Close(f)
		var st unix.Stat_t
		if err := unix.Fstat(f, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			allowed &= llFileRights
		}
		rule := landlockPathBeneath{allowed: allowed & handled, parentFd: int32(f)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, 1 /* PATH_BENEATH */, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock rule %s: %w", path, e)
		}
		return nil
	}
	for _, d := range p.ReadOnly {
		if err := add(d, llExecute|llReadFile|llReadDir, false); err != nil {
			return err
		}
	}
	for _, d := range p.Devices {
		if err := add(d, llReadFile|llWriteFile|llIoctlDev|llReadDir, false); err != nil {
			return err
		}
	}
	for _, d := range p.ReadWrite {
		if err := add(d, handled, true); err != nil {
			return err
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", e)
	}
	if err := socks.install(); err != nil {
		return err
	}
	f := p.Seccomp
	if f == nil {
		nf, err := seccomp.New(nil)
		if err != nil {
			return err
		}
		f = &nf
	}
	prog, err := f.Bytes()
	if err != nil {
		return err
	}
	if protectionOff(ProtSeccomp) {
		prog = allowAll
	}
	if err := loadFilter(prog); err != nil {
		return fmt.Errorf("box's syscall filter: %w", err)
	}
	if err := loadFilter(unixSocketsOnly()); err != nil {
		return fmt.Errorf("socket filter: %w", err)
	}
	if !protectionOff(ProtLandlockOthers) {
		if err := loadFilter(otherProcessesRefused()); err != nil {
			return fmt.Errorf("other processes filter: %w", err)
		}
	}
	if protectionOff(ProtSysV) {
		return nil
	}
	if err := loadFilter(sysvIPCRefused()); err != nil {
		return fmt.Errorf("SysV IPC filter: %w", err)
	}
	return nil
}

// ProtLandlockOthers names the refusal of calls that change another process (switched off
// only in a test build, so the drill can show the sandbox setting box's own limits).
const ProtLandlockOthers = "landlock-others"

// selfOnly is a call the Landlock mode allows only on the caller: each (argument, value)
// of Self must hold (0 is "the caller" for every one of them), else EPERM.
type selfOnly struct {
	name string
	nr   uint32
	self [][2]uint32 // argument index, the value that names the caller
}

// selfOnlyCalls act on another process, named by a pid (or a process group, or a user),
// that is yours: the kernel allows them between processes of one user, and Landlock hooks
// none of them. With no pid namespace those are your shell, your editor, your agents and
// box itself: prlimit set box's open files to 3 (its post-run audit then could not read the
// working directory, and a descendant of the command outlived it), and a process of yours
// went to nice 19, idle I/O, one CPU and SCHED_IDLE (hostile review, session 13). A thread
// id is refused too (pthread_setaffinity_np, pthread_setschedparam): the filter cannot
// tell the caller's threads from your processes.
var selfOnlyCalls = []selfOnly{
	{"prlimit64", unix.SYS_PRLIMIT64, [][2]uint32{{0, 0}}},
	{"setpriority", unix.SYS_SETPRIORITY, [][2]uint32{{0, unix.PRIO_PROCESS}, {1, 0}}},
	{"ioprio_set", unix.SYS_IOPRIO_SET, [][2]uint32{{0, 1 /* IOPRIO_WHO_PROCESS */}, {1, 0}}},
	{"sched_setaffinity", unix.SYS_SCHED_SETAFFINITY, [][2]uint32{{0, 0}}},
	{"sched_setscheduler", unix.SYS_SCHED_SETSCHEDULER, [][2]uint32{{0, 0}}},
	{"sched_setparam", unix.SYS_SCHED_SETPARAM, [][2]uint32{{0, 0}}},
	{"sched_setattr", unix.SYS_SCHED_SETATTR, [][2]uint32{{0, 0}}},
}

// selfOnlyNames are selfOnlyCalls' names, for --dry-run.
func selfOnlyNames() []string {
	var out []string
	for _, c := range selfOnlyCalls {
		out = append(out, c.name)
	}
	return out
}

// otherProcessesRefused is a filter refusing selfOnlyCalls (EPERM) unless they name the
// caller. It compares the low 32 bits of each argument: the kernel reads them as an int.
func otherProcessesRefused() []byte {
	var body []unix.SockFilter
	for _, c := range selfOnlyCalls {
		k := uint8(len(c.self))
		// [ld nr] [jeq nr] then per test [ld arg] [jeq value], then allow, refuse.
		body = append(body,
			unix.SockFilter{Code: bpfLdW, K: 0},
			unix.SockFilter{Code: bpfJeq, K: c.nr, Jt: 0, Jf: 2*k + 2})
		for i, a := range c.self {
			body = append(body,
				unix.SockFilter{Code: bpfLdW, K: 16 + 8*a[0]},
				unix.SockFilter{Code: bpfJeq, K: a[1], Jt: 0, Jf: 2*(k-uint8(i)) - 1})
		}
		body = append(body,
			unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ALLOW},
			unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	}
	return nativeABIFilter(append(body, unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ALLOW})...)
}

// sysvIPCSyscalls are System V IPC's calls: shared memory, semaphores, message queues.
var sysvIPCSyscalls = []uint32{
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SHMDT,
	unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMCTL, unix.SYS_SEMTIMEDOP,
	unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
}

// sysvIPCRefused is a filter refusing System V IPC with EPERM. Without an IPC namespace
// its objects are the user's own: a segment another process of the user made (an X
// client's MIT-SHM image, a database's shared buffers) is attached by its id, a small
// number, and read and written (review finding, session 8). Only the bwrap mode gives the
// sandbox IPC of its own.
func sysvIPCRefused() []byte {
	n := uint8(len(sysvIPCSyscalls))
	var body []unix.SockFilter
	for i, nr := range sysvIPCSyscalls {
		// a match jumps past the remaining tests and the allow, to the refusal
		body = append(body, unix.SockFilter{Code: bpfJeq, K: nr, Jt: n - uint8(i), Jf: 0})
	}
	return nativeABIFilter(append(body,
		unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	)...)
}

// unixSocketsOnly is a filter refusing socket(2) with EAFNOSUPPORT for every family
// but AF_UNIX: tier none's network (UDP, raw and netlink sockets are beyond
// Landlock's TCP rules).
func unixSocketsOnly() []byte {
	return nativeABIFilter(
		unix.SockFilter{Code: bpfJeq, K: unix.SYS_SOCKET, Jt: 0, Jf: 3},
		unix.SockFilter{Code: bpfLdW, K: 16}, // args[0], the family
		unix.SockFilter{Code: bpfJeq, K: unix.AF_UNIX, Jt: 1, Jf: 0},
		unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)},
		unix.SockFilter{Code: bpfRet, K: unix.SECCOMP_RET_ALLOW},
	)
}

// The classic BPF instructions box's own filters are made of.
const (
	bpfLdW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfRet = unix.BPF_RET | unix.BPF_K
)

// nativeABIFilter is a seccomp program that kills a call of another ABI (its numbers
// mean other calls) and runs body on the syscall number: as the kernel reads it, 8-byte
// sock_filter records, little-endian.
func nativeABIFilter(body ...unix.SockFilter) []byte {
	arch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		arch = unix.AUDIT_ARCH_AARCH64
	}
	prog := append([]unix.SockFilter{
		{Code: bpfLdW, K: 4}, // seccomp_data.arch
		{Code: bpfJeq, K: arch, Jt: 1, Jf: 0},
		{Code: bpfRet, K: unix.SECCOMP_RET_KILL_PROCESS}, // another ABI: refused whole
		{Code: bpfLdW, K: 0},                             // seccomp_data.nr
	}, body...)
	b := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		b = append(b, byte(in.Code), byte(in.Code>>8), in.Jt, in.Jf, byte(in.K), byte(in.K>>8), byte(in.K>>16), byte(in.K>>24))
	}
	return b
}

// loadFilter installs a BPF program (8-byte sock_filter records) on the calling thread.
func loadFilter(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 {
		return fmt.Errorf("a filter of %d bytes", len(prog))
	}
	fp := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); e != 0 {
		return e
	}
	runtime.KeepAlive(prog)
	return nil
}

// LandlockRun runs argv in the mode, in dir with env and the given stdio, and returns
// its exit code (128+N for signal N). rlimits are set by sh's ulimit before the exec,
// so box's own limits are untouched.
func LandlockRun(p LandlockPlan, argv, env []string, dir string, stdio []uintptr) (int, error) {
	abi := LandlockABI()
	if err := p.Check(abi); err != nil {
		return ExitStart, err
	}
	p = p.withTerminals(stdio) // landlock_tty.go
	// Each limit must take, or the command never runs (bash spells RLIMIT_NPROC -u,
	// dash -p).
	sh := "ulimit -c 0"
	if p.Nproc > 0 {
		n := strconv.FormatUint(p.Nproc, 10)
		sh += " && { ulimit -u " + n + " 2>/dev/null || ulimit -p " + n + "; }"
	}
	if p.AddrSpace > 0 {
		sh += " && ulimit -v " + strconv.FormatUint(p.AddrSpace/1024, 10)
	}
	sh += ` && exec "$@"`
	full := append([]string{"sh", "-c", sh, "box-landlock"}, argv...)
	// Without a pid namespace an orphan of the command would go to the host's init: box
	// is its reaper instead (reapBegin, landlock_reap.go), so the socket supervisor still
	// counts its sockets as the sandbox's (a tmux server, a dev server it forked) and box
	// ends it with the command, as the end of a pid namespace would.
	socks := newSockGuard(p.Sockets)
	defer socks.stop()
	if socks != nil {
		socks.roots = sandboxChildren
	}
	type started struct {
		pid int
		err error
	}
	ch := make(chan started, 1)
	before, err := reapBegin() // landlock_reap.go: the command's descendants end with it
	if err != nil {
		return ExitStart, err
	}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, domain and all
		// A fresh session keyring, as for bwrap (spawn): the command would inherit box's,
		// the operator's. The filter refuses keyctl anyway; this is the layer under it.
		if !protectionOff(ProtKeyring) {
			if err := joinNewSessionKeyring(); err != nil {
				ch <- started{err: err}
				return
			}
		}
		if err := p.restrictLandlock(abi, socks); err != nil {
			ch <- started{err: err}
			return
		}
		// Nothing of box's but stdio reaches the command: every other descriptor closes
		// on exec (ForkExec's dup2 clears it on the three it passes).
		if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
			ch <- started{err: fmt.Errorf("close_range: %w", err)}
			return
		}
		reapMu.Lock()
		pid, err := syscall.ForkExec("/bin/sh", full, &syscall.ProcAttr{Dir: dir, Env: env, Files: stdio, Sys: &syscall.SysProcAttr{Setpgid: p.OwnGroup}})
		if err == nil {
			reapStarted(pid)
		}
		reapMu.Unlock()
		ch <- started{pid, err}
	}()
	s := <-ch
	if s.err != nil {
		reapEnd(before, 0)
		return ExitStart, fmt.Errorf("the Landlock mode: %w", s.err)
	}
	if err := socks.start(s.pid); err != nil {
		// Fail closed: its connects wait for a supervisor that will not come.
		syscall.Kill(s.pid, syscall.SIGKILL)
		syscall.Wait4(s.pid, nil, 0, nil)
		return ExitStart, fmt.Errorf("the Landlock mode: %w", err)
	}
	if p.OnStart != nil {
		p.OnStart(s.pid)
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(s.pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 1, errors.Join(err, reapEnd(before, s.pid))
		}
		break
	}
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return code, reapEnd(before, s.pid)
}

// sandboxChildren are box's children that run under no_new_privs: the command and the
// orphans re-parented to box. box sets no_new_privs only on the thread that starts the
// command, so a helper box itself started is never among them.
func sandboxChildren() []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, _ := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			st, err := os.ReadFile("/proc/" + f + "/status")
			if err == nil && strings.Contains(string(st), "\nNoNewPrivs:\t1\n") {
				out = append(out, pid)
			}
		}
	}
	return out
}
