package bwrap

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/internal/ttyfilter"
	"golang.org/x/sys/unix"
)

// The command's job stopped is box stopped: on the sandbox's terminal the command runs
// as a job of the session (runJob), so Ctrl-Z, or a program suspending itself, stops it;
// nothing inside would ever continue it, and the host's terminal, raw and relayed, would
// hang on a stopped job. So the relay looks for the job's stop, gives the host terminal
// its modes back, and stops box's own process group as the terminal would have: the
// operator's shell says Stopped and has the terminal; fg (SIGCONT) continues box, which
// continues the job. An interactive shell inside keeps its jobs to itself: a job of its
// own that stops is not the command's, and its shell takes the terminal back.

// jobLook is how often the relay looks whether the command's job has stopped, and how
// soon after a suspend keystroke it looks again.
const jobLook = 100 * time.Millisecond

// watchJob starts looking for the stop of the command's job (c), until the relay ends.
// Only a relay with a terminal on box's stdin suspends box: box suspended without one
// would wait for a continue no shell of the operator's sends. Without one (only stdout
// a terminal: cat x | box run -- cmd) the job is continued at once, as the kernel did
// when it dropped the stop of the orphaned group the command led before: a command
// stopping itself there was left stopped, box and the shell waiting on it (field
// review, session 17, TestTTYFieldSelfStopStdinPiped).
func (r *relay) watchJob(c *command) {
	if r == nil || c == nil {
		return
	}
	go func() {
		t := time.NewTicker(jobLook)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			if job := c.stoppedJob(); job >= 0 {
				if r.in >= 0 {
					r.suspend()
				}
				contJob(job)
			}
		}
	}()
}

// suspend puts the host terminal back as the operator's shell had it (its modes, and a
// reset of what the sandbox left on the screen, as at the end of a run) and stops box's
// process group; it returns once box is continued (or at once when the kernel drops the
// stop: box's group is orphaned, nobody would continue it). In the foreground again, the
// terminal is made raw and the sandbox's terminal gets its size.
func (r *relay) suspend() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	withoutTTOU(func() {
		// Not in the background (ttyForeground).
		if !protectionOff(ProtTerminal) && r.foreground() {
			_, _ = r.out.Write([]byte(ttyfilter.Reset))
		}
		if r.saved != nil {
			_ = unix.IoctlSetTermios(r.in, unix.TCSETS, r.saved)
		}
	})
	r.saved = nil
	r.mu.Unlock()
	stopOwnGroup()
	if r.foreground() {
		r.makeRaw()
		r.resize()
	}
}

// stopOwnGroup stops box's process group as the terminal's Ctrl-Z would, and returns
// once box has been continued, or at once when the kernel drops the stop (the group is
// orphaned, or SIGTSTP ignored). The kernel hands a group's signal to one thread of box,
// mostly not the caller, which ran on for a moment after kill returned: box continued
// the command before it had stopped itself, and in the Landlock mode the command read a
// keystroke the operator's shell was meant to have (field review, session 17). So it
// waits until the signal has been taken: the thread that takes it starts the group stop
// under the same lock /proc/self/status is read under, so the read that finds it taken
// returns only into the stop (or after the kernel dropped it).
func stopOwnGroup() {
	if unix.Kill(0, unix.SIGTSTP) != nil {
		return
	}
	for i := 0; i < 1000 && tstpPending(); i++ {
		time.Sleep(time.Millisecond)
	}
}

// tstpPending is whether a SIGTSTP waits to be taken by a thread of box.
func tstpPending() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ShdPnd:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && m&(1<<(uint(unix.SIGTSTP)-1)) != 0
		}
	}
	return false
}

// stoppedJob holds the command's job by a pidfd when it is stopped (-1 otherwise): the
// child of the command's session (SessionMain's runJob) that leads its own process
// group, checked after the pidfd is open (a pid read from /proc may have been reused).
func (c *command) stoppedJob() int {
	select {
	case <-c.found:
	default:
		return -1
	}
	c.mu.Lock()
	session := -1
	if c.fd >= 0 {
		session = c.pidOf()
	}
	c.mu.Unlock()
	if session <= 0 {
		return -1
	}
	// A child is listed under the thread that forked it, and the session is a Go
	// program: any of its threads.
	sid := strconv.Itoa(session)
	var children []string
	tasks, _ := os.ReadDir("/proc/" + sid + "/task")
	for _, t := range tasks {
		if b, err := os.ReadFile("/proc/" + sid + "/task/" + t.Name() + "/children"); err == nil {
			children = append(children, strings.Fields(string(b))...)
		}
	}
	for _, f := range children {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		// The session still alive after the check: its pid was not reused, so the
		// process the pidfd holds is its child.
		if st, err := procStat(pid); err == nil && len(st) > 2 && st[0] == "T" && st[1] == sid && st[2] == f && c.alive() {
			return fd
		}
		unix.Close(fd)
	}
	return -1
}

// alive is whether the command (the session) has not exited, by its pidfd.
func (c *command) alive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fd >= 0 && unix.PidfdSendSignal(c.fd, 0, nil, 0) == nil
}

// contJob continues the process group led by the job the pidfd fd holds, and closes fd.
func contJob(fd int) {
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGCONT, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP); err != unix.EINVAL {
		return
	}
	// Before Linux 6.9 (no group flag): the group by its id, the leader's pid, while
	// the pidfd says the leader lives.
	if pid := pidfdPid(fd); pid > 0 && unix.PidfdSendSignal(fd, 0, nil, 0) == nil {
		_ = unix.Kill(-pid, unix.SIGCONT)
	}
}
