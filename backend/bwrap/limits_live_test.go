package bwrap_test

// Resource limits, for real: the built box as the unprivileged test user. A bounded fork
// loop stops at the pids limit while the host user keeps forking; a memory hog fails (or
// is killed, under a cgroup) while box reports it and exits; every tmpfs is sized. The
// cgroup path runs in a cgroup v1 subtree root prepares and hands to the test user,
// standing in for a systemd user manager's delegated v2 subtree (LAB.md: this machine has
// v1 only).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/testenv"
)

// forkLoop forks at most $1 children that wait for the parent to let them go, prints how
// many it got (and the error that stopped it), then waits for a line on stdin before it
// releases them: the test checks the host meanwhile. Bounded in count; the children exit
// on their own after 120 s if nobody releases them.
const forkLoop = `use strict;
$| = 1;
my $n = shift; my @kids; my $err = "none";
for (1..$n) {
	my $p = fork();
	if (!defined $p) { $err = "$!"; last }
	if ($p == 0) { sleep 120; exit 0 }
	push @kids, $p;
}
print "forked=", scalar(@kids), " err=$err\n";
<STDIN>;
kill 'KILL', @kids; waitpid($_, 0) for @kids;
print "released\n";
`

// limitsWorld is a world with profiles small (pids 64, memory 256MiB) and the fork loop.
func limitsWorld(t *testing.T) *world {
	w := newWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/small.toml"), "pids = 64\nmemory = \"256MiB\"\n")
	w.write(filepath.Join(w.proj, "fork.pl"), forkLoop)
	return w
}

// forkRun runs the fork loop in the small sandbox (through run, which may wrap box), and
// returns how many children it forked; at the limit, it checks check() on the host.
func forkRun(t *testing.T, c *exec.Cmd, check func()) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdin, stdout, stderr := startPiped(t, c)
	go func() { <-ctx.Done(); c.Process.Kill() }()
	line, err := stdout.ReadString('\n')
	if err != nil {
		c.Wait()
		t.Fatalf("no report from the fork loop: %v\n%s", err, stderr.String())
	}
	check()
	io.WriteString(stdin, "go\n")
	rest, _ := io.ReadAll(stdout)
	if err := c.Wait(); err != nil || !strings.Contains(string(rest), "released") {
		t.Errorf("box: %v, %q\n%s", err, rest, stderr.String())
	}
	var n int
	fmt.Sscanf(line, "forked=%d", &n)
	return n, strings.TrimSpace(line) + "\n" + stderr.String()
}

// startPiped starts c with its stdin and stdout as pipes and its stderr collected.
func startPiped(t *testing.T, c *exec.Cmd) (io.WriteCloser, *bufio.Reader, *strings.Builder) {
	t.Helper()
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	stderr := &strings.Builder{}
	c.Stderr = stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, bufio.NewReader(stdout), stderr
}

// hostSleepers starts n processes of the test user outside any sandbox; they count
// toward the user's processes on the host.
func (w *world) hostSleepers(n int) {
	w.t.Helper()
	var procs []*os.Process
	for i := 0; i < n; i++ {
		c := exec.Command("sleep", "300")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
		if err := c.Start(); err != nil {
			w.t.Fatal(err)
		}
		procs = append(procs, c.Process)
	}
	w.t.Cleanup(func() {
		for _, p := range procs {
			p.Kill()
			p.Wait()
		}
	})
}

// hostCanFork: the test user can still start processes on the host.
func (w *world) hostCanFork() {
	w.t.Helper()
	for i := 0; i < 20; i++ {
		c := exec.Command("true")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
		if err := c.Run(); err != nil {
			w.t.Errorf("the host user cannot fork while the sandbox is at its limit: %v", err)
			return
		}
	}
}

// checkForks: the loop stopped below the limit (the sandbox's pid 1 and the loop itself
// count too), refused with EAGAIN, and forked more than the host's own processes leave
// room for if those were counted.
func checkForks(t *testing.T, n int, out string, hostProcs int) {
	t.Helper()
	t.Logf("fork loop in a sandbox with pids 64: %s", out)
	if n >= 64 || !strings.Contains(out, "err=Resource temporarily unavailable") {
		t.Errorf("forked %d of 200, want the loop stopped below the pids limit 64 by EAGAIN:\n%s", n, out)
	}
	if n < 64-8 || n+hostProcs < 64 {
		t.Errorf("forked only %d: the host user's %d other processes were counted against the sandbox", n, hostProcs)
	}
}

func TestLimitsPidsRlimit(t *testing.T) {
	w := limitsWorld(t)
	// The host user has 80 other processes: they are not the sandbox's (RLIMIT_NPROC is
	// set on the sandbox's pid 1 inside its user namespace, where only its own count).
	w.hostSleepers(80)
	n, out := forkRun(t, w.cmd("run", "-y", "-p", "small", "--", "perl", "fork.pl", "200"), w.hostCanFork)
	checkForks(t, n, out, 80)
	// What holds the limits here: rlimits, said by --check and the dry run.
	r := w.run("--check")
	if !strings.Contains(r.stdout, "limits") || !strings.Contains(r.stdout, "rlimit") {
		t.Errorf("--check:\n%s", r.stdout)
	}
	r = w.run("run", "-p", "small", "--dry-run", "--", "true")
	if !strings.Contains(r.stdout, "limits: pids 64, memory 256MiB") || !strings.Contains(r.stdout, "held by rlimit") {
		t.Errorf("dry run:\n%s", r.stdout)
	}
}

func TestLimitsMemoryRlimit(t *testing.T) {
	w := limitsWorld(t)
	// The hog asks for 400MiB in a sandbox of 256MiB: refused, and the shell goes on.
	r := w.sh(`perl -e '$x = "a" x (400 << 20); print "allocated\n"'; echo "hog exit $?"; echo survived`, "-p", "small")
	t.Logf("memory hog: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 || strings.Contains(r.stdout, "allocated") || !strings.Contains(r.stdout, "survived") || strings.Contains(r.stdout, "hog exit 0") {
		t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same hog within the limit runs: the limit is the profile's, not a crash.
	r = w.sh(`perl -e '$x = "a" x (64 << 20); print "allocated\n"'`, "-p", "small")
	if r.code != 0 || !strings.Contains(r.stdout, "allocated") {
		t.Errorf("64MiB in 256MiB: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestLimitsTmpfs(t *testing.T) {
	w := limitsWorld(t)
	r := w.sh(`df -B1 --output=size,target /tmp /var/tmp /dev/shm "$HOME" | tail -n +2`, "-p", "small")
	sizes := map[string]int64{}
	var sum int64
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sizes[f[1]] = n
			sum += n
		}
	}
	t.Logf("tmpfs sizes with memory 256MiB: %v (together %d)", sizes, sum)
	if len(sizes) != 4 || sum > 192<<20 || sum == 0 {
		t.Errorf("tmpfs sizes %v (sum %d): want 4 mounts, together at most 3/4 of 256MiB\n%s", sizes, sum, r.stderr)
	}
	// A write past /tmp's size fails with ENOSPC, inside; the host never sees it.
	r = w.sh(`head -c 100M /dev/zero > /tmp/fill; echo "rc=$?"; head -c 100M /dev/zero > ~/fill; echo "rc=$?"`, "-p", "small")
	if strings.Count(r.stderr, "No space left on device") != 2 || strings.Count(r.stdout, "rc=1") != 2 {
		t.Errorf("writes past the tmpfs sizes:\n%s%s", r.stdout, r.stderr)
	}
}

// A cgroup v1 subtree root prepares and gives to the test user, in the pids and memory
// hierarchies, under the test's own cgroups (nothing outside them is touched).
type cgroupRig struct {
	dirs []string // one per controller, in order
}

func prepareCgroup(t *testing.T, uid, gid int, controllers ...string) cgroupRig {
	t.Helper()
	testenv.RequireRoot(t)
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{}
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	var rig cgroupRig
	name := fmt.Sprintf("box-test-%d", os.Getpid())
	for _, c := range controllers {
		mount := "/sys/fs/cgroup/" + c
		if _, err := os.Stat(filepath.Join(mount, "cgroup.procs")); err != nil || own[c] == "" {
			testenv.Skip(t, "needs the cgroup v1 "+c+" hierarchy at "+mount)
		}
		d := filepath.Join(mount, own[c], name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// The test's processes are gone; box removed its own child cgroup.
			if ents, _ := os.ReadDir(d); true {
				for _, e := range ents {
					if e.IsDir() {
						t.Errorf("box left its cgroup %s behind", filepath.Join(d, e.Name()))
						syscall.Rmdir(filepath.Join(d, e.Name()))
					}
				}
			}
			syscall.Rmdir(d)
		})
		// Delegation: the directory and the files a process is moved with belong to the user.
		for _, f := range []string{"", "cgroup.procs", "tasks"} {
			if err := os.Chown(filepath.Join(d, f), uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		rig.dirs = append(rig.dirs, d)
	}
	return rig
}

// cmd runs box as the world's user from inside the prepared cgroups: a root shell joins
// them, then drops to the user and execs box.
func (rig cgroupRig) cmd(w *world, args ...string) *exec.Cmd {
	script := ""
	for _, d := range rig.dirs {
		script += "echo $$ > " + filepath.Join(d, "cgroup.procs") + " && "
	}
	script += fmt.Sprintf(`exec setpriv --reuid=%d --regid=%d --clear-groups "$0" "$@"`, w.uid, w.gid)
	c := exec.Command("sh", append([]string{"-c", script, w.box}, args...)...)
	c.Dir, c.Env = w.proj, w.env
	return c
}

func (rig cgroupRig) run(w *world, args ...string) result {
	w.t.Helper()
	return runResult(w.t, rig.cmd(w, args...))
}

func TestLimitsCgroup(t *testing.T) {
	testenv.RequireTool(t, "setpriv")
	w := limitsWorld(t)
	rig := prepareCgroup(t, w.uid, w.gid, "pids", "memory")

	// Outside the rig, --check's fix is what the rig does (a systemd session, the v2
	// advice, changes nothing where pids and memory are v1 controllers); in it, ok.
	if r := w.run("--check"); !strings.Contains(r.stdout, "fix: pids and memory are cgroup v1 controllers on this machine") {
		t.Errorf("--check outside a delegated v1 cgroup:\n%s", r.stdout)
	}
	r := rig.run(w, "--check")
	if !strings.Contains(r.stdout, "ok    limits           cgroup1 (your cgroup "+rig.dirs[0]+")") {
		t.Errorf("--check in a delegated cgroup:\n%s", r.stdout)
	}

	// pids: the cgroup's pids.max stops the loop; the host user keeps forking.
	w.hostSleepers(80)
	n, out := forkRun(t, rig.cmd(w, "run", "-y", "-p", "small", "--", "perl", "fork.pl", "200"), w.hostCanFork)
	checkForks(t, n, out, 80)
	if !strings.Contains(out, "box: warning: the sandbox reached its pids limit (64)") {
		t.Errorf("box did not report the refused forks:\n%s", out)
	}

	// memory: a hog that touches 400MiB is killed by the cgroup's OOM killer; box says
	// so and exits with the command's status (128+SIGKILL).
	r = rig.run(w, "run", "-y", "-p", "small", "--", "perl", "-e", `$x = "a" x (400 << 20); print "allocated\n"`)
	t.Logf("memory hog under the cgroup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 137 || strings.Contains(r.stdout, "allocated") ||
		!strings.Contains(r.stderr, "box: warning: the sandbox reached its memory limit (256MiB): the kernel killed 1 process(es)") {
		t.Errorf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The drill, in the same cgroup: its limits rows hold, the memory one by the OOM
	// killer (the mapping itself is not refused: no RLIMIT_DATA under a cgroup). Only the
	// limits group, the one judged (so its drills here).
	r = rig.run(w, "drill", "--backend", "bwrap", "-p", "small", "--group", "limits", "--json")
	var rows []drill.Result
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("drill: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	seen := 0
	for _, x := range rows {
		if x.Group != "limits" {
			continue
		}
		seen++
		t.Logf("drill in the cgroup: %s %s %q", x.ID, x.Status, x.Observed)
		if x.Status != drill.Pass || x.ID == "limits:memory" && !strings.Contains(x.Observed, "killed") {
			t.Errorf("%s: %s %q", x.ID, x.Status, x.Observed)
		}
	}
	if seen != 7 {
		t.Errorf("%d limits rows, want 7", seen)
	}
	// The cgroup holding the limits is the user's own: a profile mounting cgroupfs
	// writable would let the sandbox raise them. box refuses the mount; with that
	// refusal off (a test build), the drill's limits:cgroup row reports the breach.
	w.write(filepath.Join(w.home, ".config/box/profiles/cgrw.toml"), "pids = 64\nmemory = \"256MiB\"\n[[mounts]]\npath = \"/sys/fs/cgroup\"\nmode = \"rw\"\n")
	if r = rig.run(w, "run", "-y", "-p", "cgrw", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "refusing a read-write mount of /sys/fs/cgroup") {
		t.Errorf("a writable cgroupfs mount was not refused: exit %d\n%s", r.code, r.stderr)
	}
	w.withProtectionOff(t, "kernelmounts")
	r = rig.run(w, "drill", "--backend", "bwrap", "-p", "cgrw", "--group", "limits", "--json")
	rows = nil
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("drill with the mount: exit %d: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	breached := false
	for _, x := range rows {
		if x.ID == "limits:cgroup" {
			t.Logf("limits:cgroup with cgroupfs mounted rw: %s %q", x.Status, x.Observed)
			breached = x.Status == drill.Breach
		}
	}
	if !breached || r.code == 0 {
		t.Errorf("the drill did not report the writable cgroup (exit %d)", r.code)
	}
	// tmpfs pages are memory too: they are charged to the sandbox's cgroup, and the
	// tmpfs sizes still hold.
	r = rig.run(w, "run", "-y", "-p", "small", "--", "sh", "-c", `head -c 100M /dev/zero > /tmp/fill; echo "rc=$?"`)
	if !strings.Contains(r.stdout, "rc=1") || !strings.Contains(r.stderr, "No space left on device") {
		t.Errorf("tmpfs under the cgroup:\n%s%s", r.stdout, r.stderr)
	}
}

// With the cpu controller delegated too, the sandbox's own cgroup holds all three
// limits while it runs, and is gone when it has ended.
func TestLimitsCgroupFiles(t *testing.T) {
	testenv.RequireTool(t, "setpriv")
	w := limitsWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/cpu1.toml"), "pids = 100\nmemory = \"512MiB\"\ncpu = \"1\"\n")
	rig := prepareCgroup(t, w.uid, w.gid, "pids", "memory", "cpu")
	c := rig.cmd(w, "run", "-y", "-p", "cpu1", "--", "sh", "-c", "echo up; read x")
	stdin, stdout, stderr := startPiped(t, c)
	defer c.Process.Kill()
	// The command runs only once it is under its limits: when it says "up", they hold.
	if line, err := stdout.ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("%q %v\n%s", line, err, stderr.String())
	}
	want := map[string]string{"pids.max": "100", "memory.limit_in_bytes": "536870912", "cpu.cfs_quota_us": "100000", "cpu.cfs_period_us": "100000"}
	for _, d := range rig.dirs {
		sub, _ := filepath.Glob(filepath.Join(d, "box-*"))
		if len(sub) != 1 {
			t.Fatalf("%s: sandbox cgroups %v, want one", d, sub)
		}
		procs, _ := os.ReadFile(filepath.Join(sub[0], "cgroup.procs"))
		if len(strings.Fields(string(procs))) < 2 {
			t.Errorf("%s holds %q, want the sandbox's processes", sub[0], procs)
		}
		for f, v := range want {
			if b, err := os.ReadFile(filepath.Join(sub[0], f)); err == nil && strings.TrimSpace(string(b)) != v {
				t.Errorf("%s/%s = %q, want %s", sub[0], f, b, v)
			} else if err == nil {
				delete(want, f)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("not written: %v", want)
	}
	io.WriteString(stdin, "\n")
	if err := c.Wait(); err != nil {
		t.Errorf("box: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "not enforced") {
		t.Errorf("a limit reported as not enforced:\n%s", stderr.String())
	}
	for _, d := range rig.dirs {
		if sub, _ := filepath.Glob(filepath.Join(d, "box-*")); len(sub) != 0 {
			t.Errorf("left behind: %v", sub)
		}
	}
}

// A sandbox killed by SIGKILL is reported as such, with its status.
func TestLimitsReportsKill(t *testing.T) {
	w := limitsWorld(t)
	r := w.sh(`kill -KILL $$`)
	if r.code != 137 || !strings.Contains(r.stderr, "box: warning: the command was killed (SIGKILL)") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
