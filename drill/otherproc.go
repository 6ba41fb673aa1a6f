package drill

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// KindOtherProcess: the inside sets, on a process of the operator's outside the sandbox
// (box's own drill process, Targets[0] "PID STARTTIME"), the values it already has: its
// open-file limit (prlimit), nice value, CPU affinity, scheduling policy and I/O priority.
// Any that takes = seen. The kernel allows each between processes of one user and
// Landlock hooks none, so the Landlock mode, which has no pid namespace, gave the sandbox
// box's own limits (a hostile review's finding, session 13: box at 3 open files could not
// audit, and a descendant of the command outlived it). The values written are the ones
// read, so box runs on as it was.
const KindOtherProcess Kind = "other-process"

// otherProcessProbe is the kernel group's row for it; pid is box's drill process and
// start its start time (/proc/PID/stat field 22), so that a process of the sandbox's own
// with the same number (a pid namespace of its own) is not taken for it.
func otherProcessProbe(pid int, start string) Probe {
	pr := Probe{ID: "kernel:other-process", Group: "kernel", Name: "limits and scheduling of a process of yours (box itself)",
		Kind: KindOtherProcess, Want: Blocked, Expected: "refused, or not visible"}
	if pid > 0 && start != "" {
		pr.Targets = []string{strconv.Itoa(pid) + " " + start}
	} else {
		pr.Skip = "box could not read its own start time"
	}
	return pr
}

// StartTime is process pid's start time (clock ticks since boot), "" when it cannot be read.
func StartTime(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	// The fields after the command's name, which may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22: starttime
}

// probeOtherProcess: seen when any of the calls changes the named process.
func probeOtherProcess(targets []string) (bool, string, error) {
	if len(targets) != 1 {
		return false, "", fmt.Errorf("want one process target")
	}
	pidText, start, _ := strings.Cut(targets[0], " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		return false, "", fmt.Errorf("target %q: %v", targets[0], err)
	}
	if StartTime(pidText) != start {
		return false, "box's process " + pidText + " is not visible (a pid namespace of its own)", nil
	}
	var took, refused []string
	try := func(name string, err error) {
		if err == nil {
			took = append(took, name)
		} else {
			refused = append(refused, name+" "+errnoName(err))
		}
	}
	var rl unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &rl); err != nil {
		try("prlimit", err)
	} else {
		try("prlimit", unix.Prlimit(pid, unix.RLIMIT_NOFILE, &rl, nil))
	}
	if nice, err := niceOf(pidText); err != nil {
		return false, "", err
	} else {
		try("setpriority", unix.Setpriority(unix.PRIO_PROCESS, pid, nice))
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return false, "", fmt.Errorf("sched_getaffinity %d: %w", pid, err)
	}
	try("sched_setaffinity", unix.SchedSetaffinity(pid, &set))
	attr, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		return false, "", fmt.Errorf("sched_getattr %d: %w", pid, err)
	}
	try("sched_setattr", unix.SchedSetAttr(pid, attr, 0))
	const whoProcess = 1 // IOPRIO_WHO_PROCESS
	io, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, whoProcess, uintptr(pid), 0)
	if e != 0 {
		return false, "", fmt.Errorf("ioprio_get %d: %w", pid, e)
	}
	if _, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, whoProcess, uintptr(pid), io); e != 0 {
		try("ioprio_set", e)
	} else {
		try("ioprio_set", nil)
	}
	if len(took) > 0 {
		return true, "set on box's process " + pidText + ": " + strings.Join(took, ", "), nil
	}
	return false, "refused on box's process " + pidText + ": " + strings.Join(refused, ", "), nil
}

// niceOf is process pid's nice value (/proc/PID/stat field 19).
func niceOf(pid string) (int, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 17 {
		return 0, fmt.Errorf("/proc/%s/stat: %d fields", pid, len(f))
	}
	return strconv.Atoi(f[16])
}
