package drill

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Limit probes: what a hostile tenant does to take the host's resources.
const (
	KindPidsBound   Kind = "pids-bound"   // forking Limit processes succeeded = seen
	KindMemoryBound Kind = "memory-bound" // Limit+64MiB of memory obtained and touched = seen
	KindTmpfsBound  Kind = "tmpfs-bound"  // a file of Limit+1MiB allocated in tmpfs Target = seen
	// KindMemoryTouch is the memory probe's child: it touches Limit bytes and reports.
	KindMemoryTouch Kind = "memory-touch"
)

// Limits are the sandbox's bounds the drill checks (as the resolver set them).
type Limits struct {
	Pids   int
	Memory int64
	Tmpfs  []TmpfsBound
}

// TmpfsBound is one scratch mount and its size.
type TmpfsBound struct {
	Path string
	Size int64
}

// memoryMargin is how far past the limit the memory probe reaches.
const memoryMargin = 64 << 20

// limitProbes are the limits group's rows; none when the plan names no limits.
func limitProbes(l Limits, nonce string) []Probe {
	var out []Probe
	if l.Pids > 0 {
		out = append(out, Probe{ID: "limits:pids", Group: "limits", Name: fmt.Sprintf("fork %d processes (pids limit)", l.Pids),
			Kind: KindPidsBound, Limit: int64(l.Pids), Want: Blocked, Expected: "refused before the limit"})
	}
	if l.Memory > 0 {
		out = append(out, Probe{ID: "limits:memory", Group: "limits", Name: fmt.Sprintf("take %s of memory (memory limit)", mib(l.Memory+memoryMargin)),
			Kind: KindMemoryBound, Limit: l.Memory, Want: Blocked, Expected: "refused or killed"})
	}
	if l.Pids > 0 || l.Memory > 0 {
		out = append(out, cgroupProbe())
	}
	for _, t := range l.Tmpfs {
		out = append(out, Probe{ID: "limits:tmpfs:" + t.Path, Group: "limits", Name: fmt.Sprintf("fill %s past %s", t.Path, mib(t.Size)),
			Kind: KindTmpfsBound, Targets: []string{filepath.Join(t.Path, ".box-drill-fill-"+nonce)}, Limit: t.Size, Want: Blocked, Expected: "ENOSPC"})
	}
	return out
}

func mib(n int64) string { return strconv.FormatInt(n>>20, 10) + "MiB" }

// probePidsBound forks up to limit processes that wait on a pipe. Reaching limit means
// the sandbox can take that many pids; a fork refused before it means the bound holds.
//
// At the limit the Go runtime cannot start a thread, and one it tries to start is fatal
// ("failed to create new OS thread"); a loaded host makes the runtime want one (a system
// call that takes a while has its P handed to another thread). So the whole time at the
// limit is spent outside the runtime: one child, cloned by a raw system call and running
// only raw system calls, forks the waiters, releases and reaps them, writes what it saw
// and exits; meanwhile this thread sits in one raw wait4 with every signal blocked, so it
// keeps the only P (GOMAXPROCS 1), nothing else in the process runs, and nothing needs a
// thread. When the wait returns the waiters are gone and the sandbox is below its limit.
func probePidsBound(limit int) (bool, string) {
	var res [2]int
	if err := unix.Pipe2(res[:], unix.O_CLOEXEC); err != nil {
		return false, "pipe: " + errName(err)
	}
	defer unix.Close(res[0])
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	errno := forkBomber(limit, res[1])
	unix.Close(res[1])
	if errno != 0 {
		return false, "clone: " + errName(errno)
	}
	var out [16]byte
	n := 0
	for n < len(out) {
		k, err := unix.Read(res[0], out[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || k == 0 {
			return false, fmt.Sprintf("the fork probe's child ended without a result (%d bytes): it was killed", n)
		}
		n += k
	}
	forked := binary.NativeEndian.Uint64(out[:8])
	ferr := syscall.Errno(binary.NativeEndian.Uint64(out[8:]))
	if ferr != 0 {
		return false, fmt.Sprintf("fork %d refused (%s)", forked+1, errName(ferr))
	}
	return true, fmt.Sprintf("forked %d processes, none refused", forked)
}

// forkBomber clones the child that runs bomber and waits for it, by raw system calls
// and with every signal blocked (the child inherits the mask: no Go signal handler ever
// runs in it or its waiters). It returns once the child has exited.
//
//go:nosplit
func forkBomber(limit, res int) syscall.Errno {
	all, old := ^uint64(0), uint64(0)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno == 0 && pid == 0 {
		bomber(limit, res) // does not return
	}
	if errno == 0 {
		var ws uint32
		for {
			_, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, pid, uintptr(unsafe.Pointer(&ws)), 0, 0, 0, 0)
			if e != syscall.EINTR {
				break
			}
		}
	}
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	return errno
}

// bomber is the child: a forked copy of a Go process has one thread and must not touch
// the runtime, so it makes raw system calls only. It forks waiters (each closes the
// release pipe's write end and blocks reading it) until limit or a refusal, closes the
// pipe so they exit, reaps them all, writes the count and the refusal's errno to res,
// and exits.
//
//go:nosplit
func bomber(limit, res int) {
	var p [2]int32
	var out [2]uint64
	if _, _, e := syscall.RawSyscall(syscall.SYS_PIPE2, uintptr(unsafe.Pointer(&p[0])), 0, 0); e != 0 {
		out[1] = uint64(e)
		syscall.RawSyscall(syscall.SYS_WRITE, uintptr(res), uintptr(unsafe.Pointer(&out[0])), 16)
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 1, 0, 0)
	}
	n := uint64(0)
	for n < uint64(limit) {
		pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if e != 0 {
			out[1] = uint64(e)
			break
		}
		if pid == 0 {
			var b [1]byte
			syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(p[1]), 0, 0)
			syscall.RawSyscall(syscall.SYS_READ, uintptr(p[0]), uintptr(unsafe.Pointer(&b[0])), 1)
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
		n++
	}
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(p[1]), 0, 0)
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(p[0]), 0, 0)
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, ^uintptr(0), 0, 0, 0, 0, 0)
		if e == syscall.ECHILD {
			break
		}
	}
	out[0] = n
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(res), uintptr(unsafe.Pointer(&out[0])), 16)
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
}

// probeMemoryBound asks for limit+margin bytes. Under RLIMIT_DATA the mapping itself is
// refused. Otherwise a child (this binary, running one KindMemoryTouch probe) touches
// every page: a memory cgroup kills it; if it finishes, nothing bounded it.
func probeMemoryBound(limit int64) (bool, string, error) {
	n := limit + memoryMargin
	m, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false, fmt.Sprintf("%s refused (%s)", mib(n), errName(err)), nil
	}
	unix.Munmap(m)
	exe, err := os.Executable()
	if err != nil {
		return false, "", err
	}
	plan, _ := json.Marshal(Plan{Probes: []Probe{{ID: "touch", Kind: KindMemoryTouch, Limit: n, Want: Blocked}}})
	cmd := exec.Command(exe, ProbeSubcommand)
	cmd.Stdin = bytes.NewReader(plan)
	var out bytes.Buffer
	cmd.Stdout = &out
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return false, fmt.Sprintf("mapped %s; touching it, the child was killed by signal %d (%s)", mib(n), ws.Signal(), ws.Signal()), nil
		}
		return false, fmt.Sprintf("mapped %s; touching it, the child failed (%v)", mib(n), err), nil
	}
	if err != nil {
		return false, "", err
	}
	var obs []Observation
	if json.Unmarshal(out.Bytes(), &obs) != nil || len(obs) != 1 {
		return false, "", fmt.Errorf("the memory child reported %q", out.String())
	}
	return obs[0].Seen, obs[0].Detail, nil
}

// probeMemoryTouch maps n bytes and writes to every page.
func probeMemoryTouch(n int64) (bool, string) {
	m, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false, fmt.Sprintf("%s refused (%s)", mib(n), errName(err))
	}
	for i := 0; i < len(m); i += 4096 {
		m[i] = 1
	}
	unix.Munmap(m)
	return true, fmt.Sprintf("took and touched %s", mib(n))
}

// probeTmpfsBound allocates a file one MiB larger than the mount's size. tmpfs refuses
// an allocation past its size at once (ENOSPC) without taking the memory.
func probeTmpfsBound(targets []string, size int64) (bool, string) {
	if len(targets) != 1 {
		return false, "no target"
	}
	p := targets[0]
	var st unix.Statfs_t
	detail := ""
	if unix.Statfs(filepath.Dir(p), &st) == nil {
		detail = fmt.Sprintf(" (mount size %s)", mib(int64(st.Blocks)*st.Bsize))
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, "cannot create a file: " + errName(err) + detail
	}
	defer os.Remove(p)
	defer f.Close()
	n := size + 1<<20
	if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
		return false, fmt.Sprintf("%s refused (%s)%s", mib(n), errName(err), detail)
	}
	return true, fmt.Sprintf("allocated %s%s", mib(n), detail)
}
