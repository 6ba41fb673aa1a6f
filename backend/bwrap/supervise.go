package bwrap

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heavy-duty/box/internal/rawread"
	"golang.org/x/sys/unix"
)

// command is the sandboxed command (the child of the sandbox's pid 1), held by a pidfd
// once found, so a signal can never reach a process that merely reused its pid.
//
// It also keeps box from hanging on a stopped pid 1: bwrap ends when the sandbox's pid
// 1 does, and pid 1 ends when the command does, unless something stopped it (a tracer,
// SIGSTOP from outside). Once the command has exited, its exit code is read from its
// zombie, and a pid 1 found stopped is killed; Run then reports the command's code.
type command struct {
	init   int
	initFd int // pidfd of the sandbox's pid 1, -1 if it could not be opened

	found chan struct{} // closed when fd is set (or the search gave up)
	ended chan struct{} // closed when watch returns
	fd    int           // the command's pidfd, -1 if never found

	mu         sync.Mutex
	code       int
	codeOK     bool
	killedInit bool
	stop       chan struct{}
}

// superviseCommand starts looking for the command of the sandbox whose pid 1 is init,
// and watching it; bwrapDone is closed when bwrap has exited.
func superviseCommand(init int, bwrapDone <-chan struct{}) *command {
	c := &command{init: init, initFd: -1, fd: -1, found: make(chan struct{}), ended: make(chan struct{}), stop: make(chan struct{})}
	if fd, err := unix.PidfdOpen(init, 0); err == nil {
		c.initFd = fd
	}
	go c.watch(bwrapDone)
	return c
}

func (c *command) close() {
	if c == nil {
		return
	}
	close(c.stop)
	<-c.ended
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	if c.initFd >= 0 {
		unix.Close(c.initFd)
		c.initFd = -1
	}
}

// watch finds the command, waits for it to exit, and then makes sure pid 1 follows.
func (c *command) watch(bwrapDone <-chan struct{}) {
	defer close(c.ended)
	found := false
	for wait := time.Millisecond; !found; wait = min(2*wait, 50*time.Millisecond) {
		if found = c.lookup(); found {
			break
		}
		select {
		case <-bwrapDone:
		case <-c.stop:
		case <-time.After(wait):
			continue
		}
		break
	}
	close(c.found)
	if !found {
		return
	}
	// The pidfd turns readable when the command has exited (a zombie until pid 1
	// reaps it).
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 200)
		if n > 0 || err != nil && err != unix.EINTR {
			break
		}
		select {
		case <-c.stop:
			return
		default:
		}
	}
	if st, err := procStat(c.pidOf()); err == nil && len(st) >= 50 {
		// Field 52 of proc(5): the exit status, as wait(2) reports it.
		if v, err := strconv.Atoi(st[49]); err == nil {
			ws := syscall.WaitStatus(v)
			c.mu.Lock()
			c.code, c.codeOK = ws.ExitStatus(), true
			if ws.Signaled() {
				c.code = 128 + int(ws.Signal())
			}
			c.mu.Unlock()
		}
	}
	// pid 1 ends as soon as the command has: found stopped (or traced), or still there
	// after a grace period (the command may have rewritten its code through
	// /proc/1/mem, which the same uid may write), it is killed.
	deadline := time.Now().Add(initGrace)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		st, err := procStat(c.init)
		if err != nil || len(st) == 0 {
			return // gone
		}
		if st[0] == "T" || st[0] == "t" || time.Now().After(deadline) && st[0] != "Z" {
			if c.initFd >= 0 {
				c.mu.Lock()
				c.killedInit = true
				c.mu.Unlock()
				_ = unix.PidfdSendSignal(c.initFd, unix.SIGKILL, nil, 0)
			}
			return
		}
		select {
		case <-bwrapDone:
			return
		case <-c.stop:
			return
		case <-time.After(wait):
		}
	}
}

// initGrace is how long the sandbox's pid 1 may outlive the command before box kills it
// (it normally exits at once: its only job left is to return the command's status).
const initGrace = 2 * time.Second

// pid is the command's pid, read back from its pidfd's fdinfo (-1 once it is gone).
func (c *command) pidOf() int { return pidfdPid(c.fd) }

// pidfdPid is the pid of the process the pidfd fd holds (-1 once it is gone).
func pidfdPid(fd int) int {
	b, err := rawread.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}

// lookup opens a pidfd on the first child of pid 1 and checks, after opening, that it
// names a child of pid 1: a pid read from /proc may have been reused in between.
func (c *command) lookup() bool {
	b, err := rawread.ReadFile("/proc/" + strconv.Itoa(c.init) + "/task/" + strconv.Itoa(c.init) + "/children")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	if st, err := procStat(pid); err != nil || len(st) < 2 || st[1] != strconv.Itoa(c.init) {
		unix.Close(fd)
		return false
	}
	c.mu.Lock()
	c.fd = fd
	c.mu.Unlock()
	return true
}

// signal passes s to the command's process group, as a terminal would: through the
// command's pidfd to the group it leads (on a terminal SessionMain made it a session and
// group leader), else to the members of pid 1's group (signalInitGroup), else to the
// command alone. A signal that comes before the command is found waits for it.
func (c *command) signal(s syscall.Signal) {
	if c == nil {
		return
	}
	// Never dropped: found closes once the command is found, or when bwrap has ended
	// (then there is nothing left to signal).
	<-c.found
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return
	}
	send := func(s syscall.Signal) {
		err := unix.PidfdSendSignal(c.fd, s, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP)
		if err == unix.ESRCH && c.signalInitGroup(s) {
			return
		}
		if err == unix.EINVAL {
			// Before Linux 6.9 (no group flag): the group by its id, which is the
			// command's pid while the pidfd says it is alive.
			if pid := c.pidOf(); pid > 0 && unix.Kill(-pid, s) == nil {
				return
			}
		}
		if err != nil {
			_ = unix.PidfdSendSignal(c.fd, s, nil, 0)
		}
	}
	send(s)
	// A command that stopped itself (kill -STOP $$) holds an ending signal pending, and
	// box with it, until it is continued: Ctrl-C, SIGTERM and a hangup must still end it.
	switch s {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		send(syscall.SIGCONT)
	}
}

// signalInitGroup sends s to every member of the process group of the sandbox's pid 1
// but pid 1 itself (a signal from outside its namespace is forced on it, and it would
// die of it, taking the sandbox along): without a terminal the command shares that
// group (bwrap's --new-session made pid 1 its leader), and so do its children, unless
// they moved to groups of their own, as a terminal's signals would skip them too. Each
// is held by a pidfd and checked again before the signal. False when none was found.
func (c *command) signalInitGroup(s syscall.Signal) bool {
	init := strconv.Itoa(c.init)
	inGroup := func(pid int) bool {
		st, err := procStat(pid)
		return err == nil && len(st) > 2 && st[2] == init
	}
	// A member may be forking while box looks (bash starting the command it then waits
	// for): a group signal by hand is not atomic with fork, as kill(-pgrp) would be. So
	// the walk is repeated until a round finds no member it has not signalled yet.
	signalled := map[int]bool{}
	for round := 0; round < 8; round++ {
		found := false
		for _, pid := range c.descendants() {
			if signalled[pid] || !inGroup(pid) {
				continue
			}
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if inGroup(pid) && unix.PidfdSendSignal(fd, s, nil, 0) == nil {
				signalled[pid], found = true, true
			}
			unix.Close(fd)
		}
		if !found && round > 0 {
			break
		}
		time.Sleep(2 * time.Millisecond) // lets a fork in progress show its child
	}
	return len(signalled) > 0
}

// descendants are the sandbox's processes below its pid 1 (from each task's children
// list: only the sandbox's, not every process of the machine).
func (c *command) descendants() []int { return descendantsOf(c.init) }

// descendantsOf are the processes below init, from each task's children list.
func descendantsOf(init int) []int {
	var out []int
	queue := []int{init}
	for len(queue) > 0 && len(out) < 1<<16 {
		pid := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		for _, t := range tasks {
			b, err := rawread.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
					queue = append(queue, n)
				}
			}
		}
	}
	return out
}

// killedInitCode is the command's exit code when box had to kill a stopped pid 1.
func (c *command) killedInitCode() (int, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.killedInit && c.codeOK
}
