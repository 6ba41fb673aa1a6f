package bwrap

// The end of the sandbox is the end of every process in it, not bwrap's exit. bwrap's
// pid 1 reports the command's exit code to bwrap through an eventfd as soon as the
// command has exited, and bwrap exits at once; the other processes of the pid namespace
// (a daemon the command left, in a session of its own, ignoring every signal it can)
// end only when pid 1 dies of bwrap's --die-with-parent and the kernel ends the rest of
// its namespace, which happens once pid 1 is scheduled again. A sandbox can make that
// late: the same uid may make its pid 1 SCHED_IDLE and pin it to a busy CPU. The field
// review of session 15 had a descendant, waiting for SIGKILL to show pending on pid 1,
// do exactly that and write a git hook into a nested repository after the post-run
// audit had moved it aside (TestSandboxEndsBeforeAudit). So once bwrap has exited box
// kills the sandbox's pid 1 itself and waits for it: the kernel lets a pid namespace's
// init exit only when every other process of the namespace is gone.

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/internal/rawread"
	"golang.org/x/sys/unix"
)

// ProtSandboxEnd names the wait for the sandbox's last process before Run returns
// (switched off only in a test build, so the drill can show a descendant writing after
// the post-run audit).
const ProtSandboxEnd = "sandbox-end"

// sandboxEnd holds the sandbox's pid 1 by a pidfd (-1: none, or already gone).
type sandboxEnd struct {
	fd    int
	init  int
	pidns uint64
}

// holdSandbox opens a pidfd on the sandbox's pid 1, child as bwrap reported it, and
// checks, after opening, that the pid still names a process of the sandbox's pid
// namespace (pidns, from bwrap's info; when bwrap did not say, a process that is pid 1
// of its own): a pid read earlier may have been reused if the sandbox already ended.
func holdSandbox(child int, pidns uint64) *sandboxEnd {
	e := &sandboxEnd{fd: -1}
	if child <= 0 {
		return e
	}
	fd, err := unix.PidfdOpen(child, 0)
	if err != nil {
		return e // gone: so is every process of its namespace
	}
	if !sandboxInit(child, pidns) {
		unix.Close(fd)
		return e
	}
	e.fd, e.init, e.pidns = fd, child, pidns
	return e
}

// sandboxInit reports whether pid is a process of the pid namespace pidns (by inode), or,
// when pidns is 0, pid 1 of a namespace of its own.
func sandboxInit(pid int, pidns uint64) bool {
	p := "/proc/" + strconv.Itoa(pid)
	if pidns != 0 {
		var st unix.Stat_t
		return unix.Stat(p+"/ns/pid", &st) == nil && st.Ino == pidns
	}
	b, err := rawread.ReadFile(p + "/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "NSpid:"); ok {
			f := strings.Fields(v)
			return len(f) > 1 && f[len(f)-1] == "1"
		}
	}
	return false
}

// wait ends the sandbox once bwrap has exited: its pid 1 is killed (it would die of
// --die-with-parent, whenever it is next scheduled) and waited for, and with it every
// process of its pid namespace, however stopped, detached or slowed. A process in an
// uninterruptible wait holds box here until it leaves it: nothing of the sandbox may
// still run when the post-run audit looks.
func (e *sandboxEnd) wait() {
	if e == nil || e.fd < 0 || protectionOff(ProtSandboxEnd) {
		return
	}
	_ = unix.PidfdSendSignal(e.fd, unix.SIGKILL, nil, 0)
	e.killRest()
	// A pidfd turns readable when its process has exited; for a namespace's init that
	// is after the kernel has ended and reaped the rest of the namespace.
	fds := []unix.PollFd{{Fd: int32(e.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if n > 0 || err != nil && err != syscall.EINTR {
			return
		}
	}
}

// killRest sends SIGKILL to every other process of the sandbox box finds (each held by
// a pidfd and checked to be of the sandbox's namespace), so that their end does not
// wait for a slowed pid 1 to be scheduled; a process killed so never runs another
// instruction of its own. The wait for pid 1 is what is relied on: this only makes it
// short.
func (e *sandboxEnd) killRest() {
	killed := map[int]bool{}
	for round := 0; round < 8; round++ {
		found := false
		for _, pid := range descendantsOf(e.init) {
			if killed[pid] {
				continue
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if sandboxMember(pid, e.pidns) && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				killed[pid], found = true, true
			}
			unix.Close(fd)
		}
		if !found {
			return
		}
	}
}

// sandboxMember reports whether pid is a process of the pid namespace pidns (0: of
// some namespace other than box's).
func sandboxMember(pid int, pidns uint64) bool {
	var st, self unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st) != nil {
		return false
	}
	if pidns != 0 {
		return st.Ino == pidns
	}
	return unix.Stat("/proc/self/ns/pid", &self) == nil && st.Ino != self.Ino
}

func (e *sandboxEnd) close() {
	if e != nil && e.fd >= 0 {
		unix.Close(e.fd)
		e.fd = -1
	}
}
