package bwrap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/internal/rawread"
	"golang.org/x/sys/unix"
)

// Mechanism names what holds a sandbox's limits on this host.
type Mechanism string

const (
	// MechCgroup2: a cgroup v2 subtree the user owns (a systemd user manager delegates
	// user@UID.service). pids, memory (and cpu when delegated) bound the sandbox as a
	// whole, tmpfs pages included.
	MechCgroup2 Mechanism = "cgroup2"
	// MechCgroup1: a cgroup v1 subtree the user owns in the pids and memory hierarchies
	// (prepared by root; this is what the tests use on a v1 machine).
	MechCgroup1 Mechanism = "cgroup1"
	// MechRlimit: no cgroup of the user's own. RLIMIT_NPROC bounds the sandbox's tasks
	// (counted in its own user namespace: see Attach) and RLIMIT_DATA each process's
	// private memory. Weaker: memory is per process, not per sandbox, and shared memory
	// (memfd, SysV shm), page cache and kernel memory are not counted; cpu cannot be
	// bounded.
	MechRlimit Mechanism = "rlimit"
)

// Cgroup is the host fact DetectCgroup finds: where the user may make cgroups.
type Cgroup struct {
	Version int               // 2, 1, or 0 when there is no delegated subtree
	Parent  map[string]string // controller -> directory the sandbox's cgroup is made in
	Why     string            // Version 0: why none was found, in full (box --check)
	// V1Bound: pids and memory are bound to cgroup v1 hierarchies here (a hybrid or
	// legacy machine), so no v2 subtree, systemd's delegation included, can give them.
	V1Bound bool
}

// noCgroup is the short form of Cgroup.Why, for warnings.
const noCgroup = "no cgroup of yours with the pids and memory controllers, v2 or v1"

// Controllers box uses; pids and memory are required for a cgroup to be used at all.
var cgroupControllers = []string{"pids", "memory", "cpu"}

// DetectCgroup finds the nearest cgroup at or above box's own that uid owns (and whose
// cgroup.procs it may write, so a process can be moved below it), in the v2 hierarchy
// with the pids and memory controllers delegated, else in the v1 pids and memory
// hierarchies. It only reads.
func DetectCgroup(uid int) Cgroup {
	self, err := rawread.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Cgroup{Why: "cannot read /proc/self/cgroup: " + err.Error()}
	}
	mounts, err := rawread.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Cgroup{Why: "cannot read /proc/self/mountinfo: " + err.Error()}
	}
	return detectCgroup(self, mounts, uid, owned)
}

// owned reports whether dir and its cgroup.procs belong to uid, and dir can be written
// (a cgroupfs mounted read-only, as in many containers, cannot take a child).
func owned(dir string, uid int) bool {
	if unix.Access(dir, unix.W_OK) != nil {
		return false
	}
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs")} {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			return false
		}
	}
	return true
}

// cgroupMount is one mounted hierarchy: v2, or v1 with its controllers.
type cgroupMount struct {
	root, point string
	v2          bool
	controllers []string
}

func parseMounts(mountinfo []byte) []cgroupMount {
	var out []cgroupMount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		switch g[0] {
		case "cgroup2":
			out = append(out, cgroupMount{root: f[3], point: f[4], v2: true})
		case "cgroup":
			out = append(out, cgroupMount{root: f[3], point: f[4], controllers: strings.Split(g[2], ",")})
		}
	}
	return out
}

// dirOf is the directory of cgroup path p (as /proc/self/cgroup names it) under m.
func (m cgroupMount) dirOf(p string) (string, bool) {
	if m.root != "/" {
		rest, ok := strings.CutPrefix(p, m.root)
		if !ok || rest != "" && rest[0] != '/' {
			return "", false
		}
		p = rest
	}
	return filepath.Join(m.point, p), true
}

// nearestOwned walks from dir up to the hierarchy's mount point for the first directory
// ok accepts.
func nearestOwned(dir, top string, ok func(string) bool) string {
	for d := dir; strings.HasPrefix(d, top); d = filepath.Dir(d) {
		if ok(d) {
			return d
		}
		if d == top {
			break
		}
	}
	return ""
}

func detectCgroup(self, mountinfo []byte, uid int, owned func(string, int) bool) Cgroup {
	mounts := parseMounts(mountinfo)
	v1 := map[string]string{} // controller -> own cgroup path
	v2Path, haveV2 := "", false
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2Path, haveV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	var why []string
	if haveV2 {
		for _, m := range mounts {
			if !m.v2 {
				continue
			}
			dir, ok := m.dirOf(v2Path)
			if !ok {
				continue
			}
			var missing []string
			d := nearestOwned(dir, m.point, func(d string) bool {
				if !owned(d, uid) {
					return false
				}
				b, err := rawread.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
				have := strings.Fields(string(b))
				missing = missing[:0]
				for _, c := range []string{"pids", "memory"} {
					if !contains(have, c) {
						missing = append(missing, c)
					}
				}
				return err == nil && len(missing) == 0
			})
			if d == "" {
				why = append(why, "cgroup v2: no cgroup of yours with the pids and memory controllers delegated at or above "+dir)
				break
			}
			b, _ := rawread.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
			parent := map[string]string{}
			for _, c := range cgroupControllers {
				if contains(strings.Fields(string(b)), c) {
					parent[c] = d
				}
			}
			return Cgroup{Version: 2, Parent: parent}
		}
	}
	parent := map[string]string{}
	for _, c := range cgroupControllers {
		p, in := v1[c]
		if !in {
			continue
		}
		for _, m := range mounts {
			if m.v2 || !contains(m.controllers, c) {
				continue
			}
			if dir, ok := m.dirOf(p); ok {
				if d := nearestOwned(dir, m.point, func(d string) bool { return owned(d, uid) }); d != "" {
					parent[c] = d
				} else if c != "cpu" {
					why = append(why, fmt.Sprintf("cgroup v1 %s: no cgroup of yours at or above %s", c, dir))
				}
			}
		}
	}
	if parent["pids"] != "" && parent["memory"] != "" {
		return Cgroup{Version: 1, Parent: parent}
	}
	if len(why) == 0 {
		why = append(why, "no pids and memory cgroup controllers here")
	}
	_, pids := v1["pids"]
	_, memory := v1["memory"]
	return Cgroup{Why: strings.Join(why, "; "), V1Bound: pids && memory}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Enforcement is how a sandbox's limits will be held here: decided before launch, so
// what cannot be applied is said before anything runs.
type Enforcement struct {
	Mechanism Mechanism
	Cgroup    Cgroup
	Limits    Limits
	// Unenforced says, per limit that cannot be applied here, why; box reports each one.
	Unenforced []string
}

// PlanEnforcement is pure: the limits, the cgroup fact and box's euid decide it.
func PlanEnforcement(l Limits, cg Cgroup, euid int) Enforcement {
	e := Enforcement{Mechanism: MechRlimit, Cgroup: cg, Limits: l}
	switch cg.Version {
	case 2:
		e.Mechanism = MechCgroup2
	case 1:
		e.Mechanism = MechCgroup1
	}
	if e.Mechanism == MechRlimit {
		if l.CPU > 0 {
			e.Unenforced = append(e.Unenforced, fmt.Sprintf("cpu = %d is not enforced: it needs a cgroup of yours with the cpu controller (%s)", l.CPU, noCgroup))
		}
		if euid == 0 {
			// copy_process exempts root's own uid from RLIMIT_NPROC.
			e.Unenforced = append(e.Unenforced, fmt.Sprintf("pids = %d is not enforced: RLIMIT_NPROC does not bind root (%s)", l.Pids, noCgroup))
		}
	} else if l.CPU > 0 && cg.Parent["cpu"] == "" {
		e.Unenforced = append(e.Unenforced, fmt.Sprintf("cpu = %d is not enforced: the cpu controller is not delegated to you", l.CPU))
	}
	return e
}

// Describe says in one line what holds the limits, for box --check and --dry-run.
func (e Enforcement) Describe() string {
	switch e.Mechanism {
	case MechCgroup2, MechCgroup1:
		return fmt.Sprintf("%s (your cgroup %s)", e.Mechanism, e.Cgroup.Parent["pids"])
	}
	return "rlimit (RLIMIT_NPROC, RLIMIT_DATA; weaker: " + noCgroup + ")"
}

// Enforcer holds one sandbox's limits: Start before launch, Attach to the sandbox's
// pid 1 before its command is released, Finish after it has exited.
type Enforcer struct {
	e    Enforcement
	dirs map[string]string // controller -> the sandbox's own cgroup directory
}

// Start makes the sandbox's cgroup and writes its limits (cgroup mechanisms); it does
// nothing yet for rlimits. On error nothing is left behind.
func (e Enforcement) Start() (*Enforcer, error) {
	x := &Enforcer{e: e, dirs: map[string]string{}}
	if e.Mechanism == MechRlimit {
		return x, nil
	}
	name := "box-" + strconv.Itoa(os.Getpid())
	for _, c := range cgroupControllers {
		if c == "cpu" && e.Limits.CPU == 0 {
			continue
		}
		parent := e.Cgroup.Parent[c]
		if parent == "" {
			continue
		}
		d := filepath.Join(parent, name)
		if _, seen := x.dirs[c]; seen || containsValue(x.dirs, d) {
			x.dirs[c] = d
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			x.remove()
			return nil, fmt.Errorf("limits: making the sandbox's cgroup: %w", err)
		}
		x.dirs[c] = d
	}
	if err := x.write(); err != nil {
		x.remove()
		return nil, err
	}
	return x, nil
}

func containsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

// write puts the limits in the cgroup files.
func (x *Enforcer) write() error {
	l := x.e.Limits
	type kv struct{ ctl, file, val string }
	var files []kv
	mem := strconv.FormatInt(l.Memory, 10)
	if x.e.Mechanism == MechCgroup2 {
		files = []kv{{"pids", "pids.max", strconv.Itoa(l.Pids)}, {"memory", "memory.max", mem}, {"memory", "memory.swap.max", "0"}}
		if l.CPU > 0 {
			files = append(files, kv{"cpu", "cpu.max", strconv.Itoa(l.CPU*100000) + " 100000"})
		}
	} else {
		// memsw (memory + swap) may only be set once the memory limit is below it.
		files = []kv{{"pids", "pids.max", strconv.Itoa(l.Pids)}, {"memory", "memory.limit_in_bytes", mem}, {"memory", "memory.memsw.limit_in_bytes", mem}}
		if l.CPU > 0 {
			files = append(files, kv{"cpu", "cpu.cfs_period_us", "100000"}, kv{"cpu", "cpu.cfs_quota_us", strconv.Itoa(l.CPU * 100000)})
		}
	}
	for _, f := range files {
		d := x.dirs[f.ctl]
		if d == "" {
			continue // not delegated: reported by PlanEnforcement
		}
		p := filepath.Join(d, f.file)
		if err := os.WriteFile(p, []byte(f.val), 0); err != nil {
			if errors.Is(err, os.ErrNotExist) && (f.file == "memory.swap.max" || f.file == "memory.memsw.limit_in_bytes") {
				continue // no swap accounting: there is no swap to bound
			}
			return fmt.Errorf("limits: writing %s: %w", p, err)
		}
	}
	return nil
}

// Attach puts pid (the sandbox's pid 1, still held by bwrap's block fd) under the
// limits. Set now, inside the sandbox's user namespace, RLIMIT_NPROC counts only the
// sandbox's own tasks: set on bwrap before it cloned, the kernel would also count every
// other process of the user (measured: LAB notes in docs/bwrap.md).
func (x *Enforcer) Attach(pid int) error {
	if x.e.Mechanism == MechRlimit {
		l := x.e.Limits
		for _, r := range []struct {
			res int
			n   uint64
			why string
		}{{unix.RLIMIT_NPROC, uint64(l.Pids), "pids"}, {unix.RLIMIT_DATA, uint64(l.Memory), "memory"}} {
			lim := unix.Rlimit{Cur: r.n, Max: r.n}
			if err := unix.Prlimit(pid, r.res, &lim, nil); err != nil {
				return fmt.Errorf("limits: setting the %s rlimit on the sandbox: %w", r.why, err)
			}
		}
		return nil
	}
	done := map[string]bool{}
	for _, c := range cgroupControllers {
		d := x.dirs[c]
		if d == "" || done[d] {
			continue
		}
		done[d] = true
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("limits: moving the sandbox into %s: %w", d, err)
		}
	}
	return nil
}

// Outcome is what the limits did to a sandbox, read after it exited (cgroups only).
type Outcome struct {
	OOMKills int // processes the memory limit killed
	PidsMax  int // forks refused at the pids limit
}

// Finish reads what the limits did and removes the sandbox's cgroup.
func (x *Enforcer) Finish() Outcome {
	var o Outcome
	if d := x.dirs["memory"]; d != "" {
		file, key := "memory.events", "oom_kill"
		if x.e.Mechanism == MechCgroup1 {
			file = "memory.oom_control"
		}
		o.OOMKills = counter(filepath.Join(d, file), key)
	}
	if d := x.dirs["pids"]; d != "" {
		o.PidsMax = counter(filepath.Join(d, "pids.events"), "max")
	}
	x.remove()
	return o
}

func counter(file, key string) int {
	b, err := rawread.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// remove deletes the sandbox's cgroups. The sandbox's processes are gone when bwrap has
// exited (its pid namespace dies with pid 1), but the kernel may take a moment to
// release an exited task's cgroup, and under heavy load more than 50 ms (a CI run at
// load 900 left one behind): retries backing off from 1 ms, for up to cgroupRelease,
// then the empty cgroup is left. Almost always the first rmdir succeeds.
func (x *Enforcer) remove() {
	for _, d := range x.dirs {
		delay, deadline := time.Millisecond, time.Now().Add(cgroupRelease)
		for {
			err := unix.Rmdir(d)
			if err == nil || !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				break
			}
			time.Sleep(delay)
			delay = min(2*delay, 64*time.Millisecond)
		}
	}
	x.dirs = map[string]string{}
}

// cgroupRelease bounds the wait for the kernel to release the sandbox's cgroups.
const cgroupRelease = 3 * time.Second

// HostMemory is the host's RAM (MemTotal of /proc/meminfo), in bytes.
func HostMemory() (int64, error) {
	b, err := rawread.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMemTotal(b)
}

func parseMemTotal(meminfo []byte) (int64, error) {
	for _, line := range strings.Split(string(meminfo), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && n > 0 {
					return n << 10, nil
				}
			}
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}
