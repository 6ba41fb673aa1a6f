package drill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
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

// probePidsBound forks up to limit children that wait on a pipe (they are gone as soon
// as the pipe closes, or with the sandbox). Reaching limit means the sandbox can take
// that many pids; a fork refused before it means the bound holds.
func probePidsBound(limit int) (bool, string) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return false, "pipe: " + errName(err)
	}
	// At the limit the Go runtime cannot start a thread, and one it tries to start is
	// fatal ("failed to create new OS thread"): with one P and no collector running, it
	// has no reason to, however busy the machine (a loaded host delays the loop, and the
	// scheduler would otherwise wake a second thread for the other goroutines). The
	// goroutine is not locked to its thread: the monitor preempts a long loop, and a
	// locked goroutine resumes only on its own thread after the P has gone to another.
	// Some goroutine may still make a blocking call while the loop runs, and its thread
	// then needs another to carry the P: spare threads, idle in the runtime's pool, are
	// taken instead of new ones.
	spareThreads(8)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// Allocated up front: no allocation while the sandbox is at its limit.
	kids := make([]int, 0, limit)
	var ferr syscall.Errno
	for len(kids) < limit {
		pid, errno := forkWaiter(p[0], p[1])
		if errno != 0 {
			ferr = errno
			break
		}
		kids = append(kids, pid)
	}
	// Release and reap them all by raw system calls too: until the last child is reaped
	// the sandbox is still at its limit, and a system call made the runtime's way lets
	// the monitor hand this thread's P to another thread, which it must then start (CI
	// met it in a close that took a while on a loaded host). A raw call keeps the P;
	// the monitor can only signal the thread, and the call restarts (SA_RESTART).
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(p[1]), 0, 0)
	syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(p[0]), 0, 0)
	for _, k := range kids {
		reapRaw(k)
	}
	if ferr != 0 {
		return false, fmt.Sprintf("fork %d refused (%s)", len(kids)+1, errName(ferr))
	}
	return true, fmt.Sprintf("forked %d processes, none refused", len(kids))
}

// forkWaiter forks a child that closes the pipe's write end, blocks reading the pipe
// and exits when it reads EOF. The child runs no Go code beyond raw system calls: a
// forked copy of a Go process has one thread and must not touch the runtime.
//
//go:nosplit
func forkWaiter(r, w int) (int, syscall.Errno) {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	if pid == 0 {
		var b [1]byte
		syscall.RawSyscall(syscall.SYS_CLOSE, uintptr(w), 0, 0)
		syscall.RawSyscall(syscall.SYS_READ, uintptr(r), uintptr(unsafe.Pointer(&b[0])), 1)
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	}
	return int(pid), 0
}

// spareThreads leaves n more threads idle in the runtime's pool: n goroutines block in
// a read, each holding a thread, until all are (or a bound passes); then they all
// return and their threads stay, idle.
func spareThreads(n int) {
	var p [2]int
	if syscall.Pipe2(p[:], syscall.O_CLOEXEC) != nil {
		return
	}
	base := threadCount()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b [1]byte
			syscall.Read(p[0], b[:])
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for base > 0 && threadCount() < base+n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	syscall.Close(p[1])
	wg.Wait()
	syscall.Close(p[0])
}

// threadCount is this process's thread count (0 when /proc does not say).
func threadCount() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// reapRaw waits for pid without leaving the P (see probePidsBound).
func reapRaw(pid int) {
	var ws syscall.WaitStatus
	for {
		_, _, errno := syscall.RawSyscall6(syscall.SYS_WAIT4, uintptr(pid), uintptr(unsafe.Pointer(&ws)), 0, 0, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
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
