package bwrap

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTmpfsBounded(t *testing.T) {
	mem := int64(8 << 30)
	tf := TmpfsFor(mem, false)
	if tf.Sum() > mem*3/4 || tf.Tmp <= 0 || tf.VarTmp <= 0 || tf.Shm <= 0 || tf.Home <= 0 {
		t.Errorf("tmpfs %+v (sum %d) for memory %d: want each sized, together at most 3/4", tf, tf.Sum(), mem)
	}
	s := baseSpec()
	args, err := Args(s, debianHost)
	if err != nil {
		t.Fatal(err)
	}
	// Every --tmpfs comes right after its --size.
	n := 0
	for i, a := range args {
		if a == "--tmpfs" {
			n++
			if i < 2 || args[i-2] != "--size" {
				t.Errorf("--tmpfs %s without --size", args[i+1])
			}
		}
	}
	if n != 4 {
		t.Errorf("%d tmpfs mounts, want 4 (/dev/shm, /tmp, /var/tmp, home)", n)
	}
}

func TestArgsRefuseUnlimited(t *testing.T) {
	for name, mod := range map[string]func(*Spec){
		"no pids":     func(s *Spec) { s.Limits.Pids = 0 },
		"no memory":   func(s *Spec) { s.Limits.Memory = 0 },
		"no tmpfs":    func(s *Spec) { s.Tmpfs.Home = 0 },
		"no block fd": func(s *Spec) { s.BlockFD = 0 },
	} {
		s := baseSpec()
		mod(&s)
		if _, err := Args(s, debianHost); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

const mountinfoV1 = `25 1 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw
30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
31 25 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
32 25 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
33 25 0:29 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestDetectCgroupV1(t *testing.T) {
	self := []byte("8:pids:/box-test/u\n4:memory:/h/box-test\n1:cpu:/\n0::/\n")
	mine := map[string]bool{"/sys/fs/cgroup/pids/box-test": true, "/sys/fs/cgroup/memory/h/box-test": true}
	cg := detectCgroup(self, []byte(mountinfoV1), 1001, func(d string, _ int) bool { return mine[d] })
	if cg.Version != 1 || cg.Parent["pids"] != "/sys/fs/cgroup/pids/box-test" || cg.Parent["memory"] != "/sys/fs/cgroup/memory/h/box-test" || cg.Parent["cpu"] != "" {
		t.Errorf("got %+v", cg)
	}
	// Only pids delegated: no cgroup mechanism, and the reason names memory.
	delete(mine, "/sys/fs/cgroup/memory/h/box-test")
	cg = detectCgroup(self, []byte(mountinfoV1), 1001, func(d string, _ int) bool { return mine[d] })
	if cg.Version != 0 || !strings.Contains(cg.Why, "memory") {
		t.Errorf("got %+v", cg)
	}
}

// Where pids and memory are v1 controllers, --check's fix is v1 delegation: the v2
// advice (a systemd session) changed nothing when followed (field review, session 21).
func TestLimitsCheckFixV1Bound(t *testing.T) {
	self := []byte("8:pids:/u\n4:memory:/h\n1:cpu:/\n0::/\n")
	cg := detectCgroup(self, []byte(mountinfoV1), 1001, func(string, int) bool { return false })
	if !cg.V1Bound {
		t.Fatalf("pids and memory in v1 hierarchies: %+v", cg)
	}
	if fix := limitsCheck(cg, 1001).Fix; !strings.Contains(fix, "cgroup v1 controllers") || strings.Contains(fix, "systemd session (its") {
		t.Errorf("v1-bound fix: %s", fix)
	}
	v2 := detectCgroup([]byte("0::/user.slice\n"), []byte("40 25 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"), 1001, func(string, int) bool { return false })
	if v2.V1Bound || !strings.Contains(limitsCheck(v2, 1001).Fix, "systemd session") {
		t.Errorf("v2 machine: %+v, fix %q", v2, limitsCheck(v2, 1001).Fix)
	}
}

func TestDetectCgroupV2(t *testing.T) {
	root := t.TempDir()
	svc := filepath.Join(root, "user.slice/user-1000.slice/user@1000.service")
	leaf := filepath.Join(svc, "app.slice/term.scope")
	os.MkdirAll(leaf, 0o755)
	os.WriteFile(filepath.Join(svc, "cgroup.subtree_control"), []byte("cpu memory pids\n"), 0o644)
	os.WriteFile(filepath.Join(svc, "app.slice", "cgroup.subtree_control"), []byte("memory pids\n"), 0o644)
	os.WriteFile(filepath.Join(leaf, "cgroup.subtree_control"), []byte("\n"), 0o644)
	mi := []byte("40 25 0:30 / " + root + " rw - cgroup2 cgroup2 rw\n")
	self := []byte("0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n")
	own := func(d string, _ int) bool { return strings.HasPrefix(d, svc) }
	cg := detectCgroup(self, mi, 1000, own)
	// The nearest owned cgroup with pids and memory for its children: app.slice (no cpu).
	if cg.Version != 2 || cg.Parent["pids"] != filepath.Join(svc, "app.slice") || cg.Parent["cpu"] != "" {
		t.Errorf("got %+v", cg)
	}
	e := PlanEnforcement(Limits{Pids: 100, Memory: 1 << 30, CPU: 1}, cg, 1000)
	if e.Mechanism != MechCgroup2 || len(e.Unenforced) != 1 || !strings.Contains(e.Unenforced[0], "cpu = 1") {
		t.Errorf("enforcement %+v", e)
	}
	// Nothing owned: rlimits, and a cpu limit is reported as not enforced.
	cg = detectCgroup(self, mi, 1000, func(string, int) bool { return false })
	e = PlanEnforcement(Limits{Pids: 100, Memory: 1 << 30, CPU: 2}, cg, 1000)
	if cg.Version != 0 || e.Mechanism != MechRlimit || len(e.Unenforced) != 1 {
		t.Errorf("cgroup %+v, enforcement %+v", cg, e)
	}
	// As root, RLIMIT_NPROC does not bind: reported too.
	if e := PlanEnforcement(Limits{Pids: 100, Memory: 1 << 30}, cg, 0); len(e.Unenforced) != 1 || !strings.Contains(e.Unenforced[0], "pids") {
		t.Errorf("root: %+v", e)
	}
}

func TestParseMemTotal(t *testing.T) {
	n, err := parseMemTotal([]byte("MemTotal:       24683520 kB\nMemFree: 1 kB\n"))
	if err != nil || n != 24683520<<10 {
		t.Errorf("%d %v", n, err)
	}
	if _, err := parseMemTotal([]byte("MemFree: 1 kB\n")); err == nil {
		t.Error("no MemTotal accepted")
	}
}

// BenchmarkLimitFacts: what finding the limit mechanism adds to every launch (reading
// /proc/self/cgroup, mountinfo and meminfo, a few stats).
func BenchmarkLimitFacts(b *testing.B) {
	for i := 0; i < b.N; i++ {
		DetectCgroup(os.Geteuid())
		if _, err := HostMemory(); err != nil {
			b.Fatal(err)
		}
	}
}

// The cgroup v2 files box writes, in a directory standing for a delegated subtree (this
// machine's cgroup2 has no controllers; the v1 path runs for real in cmd/box).
func TestEnforcerV2Files(t *testing.T) {
	parent := t.TempDir()
	cg := Cgroup{Version: 2, Parent: map[string]string{"pids": parent, "memory": parent, "cpu": parent}}
	e := PlanEnforcement(Limits{Pids: 300, Memory: 1 << 30, CPU: 2}, cg, 1000)
	if e.Mechanism != MechCgroup2 || len(e.Unenforced) != 0 {
		t.Fatalf("%+v", e)
	}
	x, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "box-"+strconv.Itoa(os.Getpid()))
	if err := x.Attach(4242); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{"pids.max": "300", "memory.max": "1073741824", "memory.swap.max": "0",
		"cpu.max": "200000 100000", "cgroup.procs": "4242"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", f, b, err, want)
		}
	}
	os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pids.events"), []byte("max 7\n"), 0o644)
	if o := x.Finish(); o.OOMKills != 1 || o.PidsMax != 7 {
		t.Errorf("outcome %+v", o)
	}
}
