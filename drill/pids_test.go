package drill

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// pidsChildEnv makes the test binary the pids probe's subject: it joins the cgroup
// whose cgroup.procs the variable names, runs the probe at the limit after the comma,
// and prints what the probe saw.
const pidsChildEnv = "BOX_DRILL_PIDS_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(pidsChildEnv); v != "" {
		procs, limit, _ := strings.Cut(v, ",")
		n, _ := strconv.Atoi(limit)
		if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "join cgroup:", err)
			os.Exit(3)
		}
		// Threads held in blocking system calls, as a runner's goroutines hold them
		// (a child's output being copied, a signal being waited for): with none idle,
		// any thread the runtime wants at the limit is a new one.
		for range 4 {
			var p [2]int
			syscall.Pipe(p[:])
			go func() {
				var b [1]byte
				syscall.Read(p[0], b[:])
			}()
		}
		seen, detail := probePidsBound(n)
		fmt.Printf("%v %s\n", seen, detail)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The pids probe survives its own limit on a loaded machine: at the limit the Go
// runtime cannot start a thread, and starting one is fatal. CI met it twice, in the
// close that released the children and (before that fix) in the scheduler; here the
// machine is kept busy outside the cgroup while the probe runs at a real pids.max many
// times, and every run must end with the refusal reported.
func TestPidsProbeAtLimitUnderLoad(t *testing.T) {
	testenv.RequireRoot(t)
	cg := pidsCgroup(t)
	const limit = 1024
	if err := os.WriteFile(filepath.Join(cg, "pids.max"), []byte(strconv.Itoa(limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	defer stop.Store(true)
	for range 2 * runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), pidsChildEnv+"="+filepath.Join(cg, "cgroup.procs")+","+strconv.Itoa(limit))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: the probe's process failed at the limit: %v\n%s", i, err, firstLines(string(out), 40))
		}
		if !strings.HasPrefix(string(out), "false fork ") || !strings.Contains(string(out), "refused") {
			t.Fatalf("run %d: the probe did not report the refusal: %s", i, out)
		}
	}
}

// pidsCgroup makes a pids cgroup of the test's own (v1 hierarchy, or v2 with the pids
// controller enabled for the root's children) and removes it at the end.
func pidsCgroup(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("box-drilltest-%d", os.Getpid())
	var dir string
	if _, err := os.Stat("/sys/fs/cgroup/pids/cgroup.procs"); err == nil {
		dir = filepath.Join("/sys/fs/cgroup/pids", name)
	} else if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b)+" ", " pids") {
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+pids"), 0o644); err != nil {
			testenv.Skip(t, "cannot enable the pids controller: "+err.Error())
		}
		dir = filepath.Join("/sys/fs/cgroup", name)
	} else {
		testenv.Skip(t, "no pids cgroup controller")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}
