package bwrap

// The Landlock mode has no pid namespace whose end takes every process with it: a
// command can leave a descendant (setsid, a double fork) that outlives box, writes after
// the post-run audit has looked, and plants what the host then runs. So box is a child
// subreaper while a command runs (every orphan of the command becomes box's child, however
// it detached), and when the command has ended box kills and reaps every process that
// became its child since, until none is left, before the audit.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ProtReap names the end of the command's descendants (switched off only in a test
// build, so the drill can show a descendant writing after the audit).
const ProtReap = "landlock-reap"

var (
	reapMu sync.Mutex
	// reapRuns counts the commands running (the subreaper stays while any does);
	// reapCommands are their pids, which another run's reaping leaves alone.
	reapRuns     int
	reapCommands = map[int]bool{}
)

// reapBegin makes box a child subreaper and returns the children it has now (not the
// run's, never killed). Call it before the command starts; every reapBegin is followed
// by one reapEnd.
func reapBegin() (map[int]bool, error) {
	reapMu.Lock()
	defer reapMu.Unlock()
	if reapRuns == 0 {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return nil, fmt.Errorf("child subreaper: %w", err)
		}
	}
	reapRuns++
	return children()
}

// reapStarted registers pid as a command of a run (called with reapMu held around the
// fork, so that no other run's reaping sees it unregistered).
func reapStarted(pid int) { reapCommands[pid] = true }

// reapEnd kills and reaps every process that became box's child since before, other
// than the commands of runs still going, until none is left; then, when no run is
// left, box stops being a subreaper. An error is a descendant box could not find or end:
// it may still write.
func reapEnd(before map[int]bool, pid int) error {
	reapMu.Lock()
	delete(reapCommands, pid)
	reapMu.Unlock()
	defer func() {
		reapMu.Lock()
		if reapRuns--; reapRuns == 0 {
			unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		}
		reapMu.Unlock()
	}()
	if protectionOff(ProtReap) {
		return nil
	}
	for {
		reapMu.Lock()
		kids, err := children()
		var left []int
		for k := range kids {
			if !before[k] && !reapCommands[k] {
				left = append(left, k)
			}
		}
		reapMu.Unlock()
		if err != nil {
			return fmt.Errorf("the command's descendants: %w", err)
		}
		if len(left) == 0 {
			return nil
		}
		// A process being killed forks no more; its children are box's before it can
		// be reaped, so the next look finds them.
		for _, k := range left {
			unix.Kill(k, unix.SIGKILL)
		}
		for _, k := range left {
			for {
				_, err := unix.Wait4(k, nil, unix.WALL, nil)
				if err == unix.EINTR {
					continue
				}
				if err != nil && err != unix.ECHILD {
					return fmt.Errorf("the command's descendants: wait %d: %w", k, err)
				}
				break
			}
		}
	}
}

// children are box's children: each thread's (/proc/self/task/*/children), else, where
// the kernel has no such file, every process whose parent is box.
func children() (map[int]bool, error) {
	out := map[int]bool{}
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return childrenByScan()
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %q", t, f)
			}
			out[n] = true
		}
	}
	return out, nil
}

// childrenByScan reads the parent of every process in /proc.
func childrenByScan() (map[int]bool, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := strconv.Itoa(os.Getpid())
	out := map[int]bool{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := procStat(n)
		if err != nil || len(st) < 2 {
			continue // gone
		}
		if st[1] == self {
			out[n] = true
		}
	}
	return out, nil
}
