package bwrap_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/boxtest"
	"golang.org/x/sys/unix"
)

// The Landlock mode runs the command as you, with no pid namespace: the kernel lets a
// process of yours set another's resource limits (prlimit), nice value, I/O priority, CPU
// affinity and scheduling policy, and Landlock hooks none of these (hostile review,
// session 13: the sandbox set a process of yours to 5 open files, nice 19, idle I/O, one
// CPU and SCHED_IDLE, and box's own to 3 open files, after which box's post-run audit
// could not read the working directory and a descendant of the command outlived the run).
// The filter refuses each of them for any process but the caller.
func TestLandlockOtherProcessRefused(t *testing.T) {
	w := landlockWorld(t)
	v := exec.Command("/bin/sleep", "600")
	v.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.UID), Gid: uint32(w.GID)}, Setsid: true}
	boxtest.Must(t, v.Start())
	defer func() { v.Process.Kill(); v.Wait() }()
	pid := strconv.Itoa(v.Process.Pid)
	before := victimState(t, v.Process.Pid)
	// Against the process of yours, then against box itself ($PPID: sh execs the command).
	probe := `for p in ` + pid + ` $PPID; do
prlimit --pid $p --nofile=3:3 2>/dev/null && echo "BREACH-PRLIMIT-$p"
prlimit --pid $p --nofile >/dev/null 2>&1 && echo "READ-PRLIMIT-$p"
renice -n 19 -p $p >/dev/null 2>&1 && echo "BREACH-RENICE-$p"
ionice -c 3 -p $p 2>/dev/null && echo "BREACH-IONICE-$p"
taskset -p 1 $p >/dev/null 2>&1 && echo "BREACH-TASKSET-$p"
chrt -i -p 0 $p 2>/dev/null && echo "BREACH-CHRT-$p"
done
renice -n 5 -g 0 >/dev/null 2>&1 && echo BREACH-RENICE-PGRP
renice -n 5 -u $(id -u) >/dev/null 2>&1 && echo BREACH-RENICE-USER
ionice -c 3 -P 0 2>/dev/null && echo BREACH-IONICE-PGRP
ulimit -n 100 && echo OWN-ULIMIT
nice -n 3 true && echo OWN-NICE
prlimit --nofile=50:50 true && echo OWN-PRLIMIT
ionice -c 3 true && echo OWN-IONICE
chrt -i 0 true && echo OWN-CHRT`
	r := w.Run("run", "-p", "ll", "-y", "-q", "--isolation", "landlock", "--", "sh", "-c", probe)
	t.Logf("exit %d\n%s", r.Code, r.Stdout)
	if strings.Contains(r.Stdout, "BREACH") || strings.Contains(r.Stdout, "READ-PRLIMIT") {
		t.Errorf("the Landlock mode's sandbox changed (or read) a process of yours outside it:\n%s", r.Stdout)
	}
	if after := victimState(t, v.Process.Pid); after != before {
		t.Errorf("the process of yours after the run:\n%s\nbefore:\n%s", after, before)
	}
	for _, own := range []string{"OWN-ULIMIT", "OWN-NICE", "OWN-PRLIMIT", "OWN-IONICE", "OWN-CHRT"} {
		if !strings.Contains(r.Stdout, own) {
			t.Errorf("the command's own %s was refused:\n%s%s", own, r.Stdout, r.Stderr)
		}
	}
	if r.Code != 0 {
		t.Errorf("exit %d:\n%s", r.Code, r.Stderr)
	}
}

// victimState is what the sandbox tried to change in process pid: its open-file limit,
// nice value, scheduling policy, CPU affinity and I/O priority.
func victimState(t *testing.T, pid int) string {
	t.Helper()
	lim, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	boxtest.Must(t, err)
	var nofile string
	for _, l := range strings.Split(string(lim), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			nofile = strings.Join(strings.Fields(l)[3:5], ":")
		}
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	boxtest.Must(t, err)
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	var set unix.CPUSet
	boxtest.Must(t, unix.SchedGetaffinity(pid, &set))
	io, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, 1 /* IOPRIO_WHO_PROCESS */, uintptr(pid), 0)
	if e != 0 {
		t.Fatal(e)
	}
	return "nofile " + nofile +
		" nice " + f[16] + " policy " + f[38] + " cpus " + strconv.Itoa(set.Count()) + " ioprio " + strconv.Itoa(int(io))
}

// The drill's kernel:other-process row sets box's own limits and scheduling to what they
// are from inside: PASS in the Landlock mode (refused) and the bwrap mode (not visible);
// BREACH with the refusal off. Its kernel:watch-home row puts an inotify watch on your
// home: NOT HELD in the Landlock mode (Landlock does not govern watches), PASS in the
// bwrap mode (a home of its own).
func TestLandlockDrillOtherProcessRow(t *testing.T) {
	w := landlockWorld(t)
	rows := func(mode string) map[string]drill.Result {
		return kernelDrillRows(t, w, mode, "kernel:other-process", "kernel:watch-home")
	}
	for mode, watch := range map[string]drill.Status{"landlock": drill.NotHeld, "bwrap": drill.Pass} {
		got := rows(mode)
		if x := got["kernel:other-process"]; x.Status != drill.Pass {
			t.Errorf("%s: kernel:other-process: %s %s", mode, x.Status, x.Observed)
		}
		if x := got["kernel:watch-home"]; x.Status != watch {
			t.Errorf("%s: kernel:watch-home: %s %s, want %s", mode, x.Status, x.Observed, watch)
		}
	}
	w.WithProtectionOff(t, bwrap.ProtLandlockOthers)
	if x := rows("landlock")["kernel:other-process"]; x.Status != drill.Breach {
		t.Errorf("refusal off: kernel:other-process: %s %s", x.Status, x.Observed)
	}
}

// The Landlock mode shares box's terminal with the command: what the command leaves
// changed on it outlives the run unless box puts it back, as the bwrap mode does. A
// hostile review (session 13) stopped its output (tcflow TCOOFF, as Ctrl-S does): after
// box exited every write to the terminal, your shell's prompt, hung. Echo off (stty
// -echo) stayed off too.
func TestLandlockTerminalRestored(t *testing.T) {
	s := landlockOnTerminal(t, landlockWorld(t), `system("stty -echo"); print "DONE-PROBES\n"; ioctl(STDOUT, 0x540A, 0) or die "TCOOFF: $!"`)
	tm, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	boxtest.Must(t, err)
	if tm.Lflag&unix.ECHO == 0 {
		t.Errorf("after the Landlock run your terminal is left without echo")
	}
	// A write to a terminal whose output is stopped blocks; without blocking, EAGAIN.
	fd := int(s.Fd()) // Fd makes the file blocking: once, before
	boxtest.Must(t, unix.SetNonblock(fd, true))
	if _, err := unix.Write(fd, []byte("AFTER\r\n")); err != nil {
		t.Errorf("after the Landlock run a write to your terminal: %v (its output is left stopped: your shell's prompt hangs)", err)
	}
}

// The drill's kernel:terminal row in the Landlock mode (the runner turns echo off on its
// terminal, box's): PASS, box puts it back; BREACH with the restore off.
func TestLandlockDrillTerminalModesRow(t *testing.T) {
	w := landlockWorld(t)
	row := func() drill.Result { return kernelDrillRows(t, w, "landlock", "kernel:terminal")["kernel:terminal"] }
	if got := row(); got.Status != drill.Pass {
		t.Errorf("kernel:terminal: %s %s", got.Status, got.Observed)
	}
	w.WithProtectionOff(t, bwrap.ProtTerminal)
	if got := row(); got.Status != drill.Breach {
		t.Errorf("restore off: kernel:terminal: %s %s", got.Status, got.Observed)
	}
}

// kernelDrillRows runs box drill's kernel group in mode with profile ll and returns the
// rows named ids (each must be there).
func kernelDrillRows(t *testing.T, w *boxtest.World, mode string, ids ...string) map[string]drill.Result {
	t.Helper()
	r := w.Run("drill", "-p", "ll", "--isolation", mode, "--group", "kernel", "--json")
	var rs []drill.Result
	if err := json.Unmarshal([]byte(r.Stdout), &rs); err != nil {
		t.Fatalf("box drill --isolation %s --json: %v (exit %d)\n%s", mode, err, r.Code, r.Stderr)
	}
	out := map[string]drill.Result{}
	for _, x := range rs {
		if slices.Contains(ids, x.ID) {
			t.Logf("%s: %s: %s %s", mode, x.ID, x.Status, x.Observed)
			out[x.ID] = x
		}
	}
	if len(out) != len(ids) {
		t.Fatalf("box drill --isolation %s: rows %q missing:\n%s", mode, ids, r.Stdout)
	}
	return out
}
