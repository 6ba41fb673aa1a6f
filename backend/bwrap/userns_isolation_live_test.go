package bwrap_test

// box run --isolation landlock for real, as the unprivileged user, where no user
// namespace can be had (the Docker-like filter refusing CLONE_NEWUSER): the same session
// as bwrap's (env audit, instance directory, post-run audit, the command's exit code),
// secrets unreadable, writes only in the working and instance directories, tier none
// with no network, every NOT HELD item said; the tiers it cannot give refused by name.

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

func TestIsolationLandlockRun(t *testing.T) {
	testenv.RequireRoot(t)
	if abi := bwrap.LandlockABI(); abi < 4 {
		testenv.Skip(t, "requires Landlock ABI 4, this kernel has "+strconv.Itoa(abi))
	}
	w := boxtest.NewWorld(t)
	tmp := "/tmp/box-isolation-probe-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(tmp); os.Remove(w.Home + "/planted") })
	script := `for f in ` + strings.Join(secretPaths(w), " ") + `; do cat "$f" 2>/dev/null && echo "BREACH-SECRET $f"; done
ls ` + w.Home + ` >/dev/null 2>&1 && echo BREACH-LS-HOME
echo x > ` + w.Home + `/planted 2>/dev/null && echo BREACH-WRITE-HOME
echo x > ` + tmp + ` 2>/dev/null && echo BREACH-WRITE-TMP
echo x > /usr/local/box-isolation-probe 2>/dev/null && echo BREACH-WRITE-USR
python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)' 2>/dev/null && echo BREACH-UDP
python3 -c 'import socket; s=socket.socket(); s.settimeout(2); s.connect(("127.0.0.1", 22))' 2>/dev/null && echo BREACH-TCP-CONNECT
python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)' 2>/dev/null && echo BREACH-NETLINK
echo ok > "$PWD/w" && echo PASS-WRITE-WORK
echo ok > "$HOME/w" && echo PASS-WRITE-INST
echo ok > "$TMPDIR/w" && echo PASS-WRITE-TMPDIR
echo "SANDBOX=$BOX_SANDBOX"
exit 7`
	// RLIMIT_NPROC counts all the user's tasks (NOT HELD: no cgroup), and other tests'
	// drills fork thousands as the same user: the profile's pids is the hard limit, so
	// the limit is set without racing them.
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "isolation = \"landlock\"\npids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	r := inCase(w, "seccomp", "run", "-p", "ll", "-y", "--", "sh", "-c", script)
	t.Logf("box run --isolation landlock under the Docker-like filter: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if r.Code != 7 {
		t.Fatalf("exit %d, want the command's 7", r.Code)
	}
	for _, b := range []string{"BREACH"} {
		if strings.Contains(r.Stdout, b) {
			t.Errorf("the Landlock mode let a probe through:\n%s", r.Stdout)
		}
	}
	for _, p := range []string{"PASS-WRITE-WORK", "PASS-WRITE-INST", "PASS-WRITE-TMPDIR", "SANDBOX=landlock"} {
		if !strings.Contains(r.Stdout, p) {
			t.Errorf("the Landlock mode refused %s", p)
		}
	}
	// What the run said: the env audit (the session's), the mode, every NOT HELD item.
	for _, s := range append([]string{"box: isolation: landlock", "HOME"}, bwrap.LandlockNotHeld...) {
		if !strings.Contains(r.Stderr, s) {
			t.Errorf("box run's stderr lacks %q", s)
		}
	}
	if !strings.Contains(r.Stderr, "box: NOT HELD: the protected set inside the working directory") {
		t.Errorf("the protected set's NOT HELD line is missing")
	}
	if _, err := os.Stat(w.Proj + "/w"); err != nil {
		t.Errorf("the working directory's write did not land: %v", err)
	}

	// A tier the mode cannot give is refused by name, before anything runs.
	r = inCase(w, "seccomp", "run", "--isolation", "landlock", "-n", "internet", "-y", "--", "sh", "-c", "echo RAN > ran2")
	if r.Code != 125 || !strings.Contains(r.Stderr, "cannot give network tier internet") {
		t.Errorf("tier internet: exit %d\n%s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(w.Proj + "/ran2"); err == nil {
		t.Error("the command ran")
	}

	// Without the opt-in, box run fails as before (exit 125) and says the mode exists and
	// what it does not hold; with the opt-in (auto) it falls back, saying why.
	r = inCase(w, "seccomp", "run", "-y", "--", "sh", "-c", "echo RAN > ran3")
	if r.Code != 125 || !strings.Contains(r.Stderr, "--isolation landlock") || !strings.Contains(r.Stderr, "does NOT hold") {
		t.Errorf("default: exit %d\n%s", r.Code, r.Stderr)
	}
	r = inCase(w, "seccomp", "run", "-p", "ll", "--isolation", "auto", "-y", "--", "sh", "-c", "echo RAN > ran4")
	if r.Code != 0 || !strings.Contains(r.Stderr, "isolation auto: running in the Landlock mode") || !strings.Contains(r.Stderr, "box: NOT HELD: private /proc") {
		t.Errorf("auto: exit %d\n%s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(w.Proj + "/ran4"); err != nil {
		t.Errorf("auto: the command did not run: %v", err)
	}
	// Start-up, the same run, the same user, the same box (logged, not asserted): box run
	// -y -- true in each mode, the median of five.
	median := func(args ...string) time.Duration {
		var ds []time.Duration
		for range 5 {
			start := time.Now()
			if r := w.Run(args...); r.Code != 0 {
				t.Fatalf("box %v: exit %d\n%s", args, r.Code, r.Stderr)
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[2]
	}
	bw, ll := median("run", "-y", "--", "true"), median("run", "-p", "ll", "-y", "--", "true")
	t.Logf("start-up, box run -y -- true: bwrap %v, landlock %v (landlock/bwrap %.2f)", bw, ll, float64(ll)/float64(bw))
	// Where bwrap starts, auto is bwrap: nothing about the Landlock mode is said.
	if r := w.Run("run", "--isolation", "auto", "-y", "--", "true"); r.Code != 0 || strings.Contains(r.Stderr, "NOT HELD") {
		t.Errorf("auto where bwrap starts: exit %d\n%s", r.Code, r.Stderr)
	}
}

func secretPaths(w *boxtest.World) []string {
	var out []string
	for rel := range boxtest.Secrets {
		out = append(out, w.Home+"/"+rel)
	}
	return out
}

// The drill in the Landlock mode, where no user namespace can be had (the Docker-like
// filter; max_user_namespaces=0 in a user namespace the test owns): every row PASS or NOT
// HELD with its reason (or SKIP/WARN as anywhere), never BREACH; the secrets and writes
// rows PASS; the unix-path row PASS (box mediates unix sockets in this mode too); the
// summary counts NOT HELD.
func TestIsolationLandlockDrill(t *testing.T) {
	testenv.RequireRoot(t)
	if abi := bwrap.LandlockABI(); abi < 4 {
		testenv.Skip(t, "requires Landlock ABI 4, this kernel has "+strconv.Itoa(abi))
	}
	for _, mode := range []string{"seccomp", "maxzero"} {
		t.Run(mode, func(t *testing.T) {
			w := boxtest.NewWorld(t)
			rows, r := landlockDrill(t, w, mode)
			if r.Code != 0 {
				t.Errorf("box drill: exit %d", r.Code)
			}
			n := map[drill.Status]int{}
			for _, row := range rows {
				n[row.Status]++
				switch {
				case row.Status == drill.Breach || row.Status == drill.Fail || row.Status == drill.Error:
					t.Errorf("%s %s: %s", row.Status, row.ID, row.Observed)
				case row.Status == drill.NotHeld && !strings.HasPrefix(row.Observed, "the Landlock mode: "):
					t.Errorf("NOT HELD %s without the mode's reason: %s", row.ID, row.Observed)
				case row.Status == drill.NotHeld && strings.Contains(row.Observed, "unix sockets are not mediated"):
					t.Errorf("%s: NOT HELD, but this kernel mediates unix sockets: %s", row.ID, row.Observed)
				case strings.HasPrefix(row.ID, "secret:") && strings.Contains(strings.ReplaceAll(row.Observed, "unreadable", ""), "readable"):
					t.Errorf("%s: a secret's content is readable: %s", row.ID, row.Observed)
				case (strings.HasPrefix(row.ID, "write") || strings.HasPrefix(row.ID, "net:")) && row.Status != drill.Pass && row.Status != drill.Skip:
					t.Errorf("%s: %s %s", row.ID, row.Status, row.Observed)
				}
			}
			for _, id := range []string{"pids", "secret:ssh"} {
				if !slices.ContainsFunc(rows, func(r drill.Result) bool { return r.ID == id && r.Status == drill.NotHeld }) {
					t.Errorf("row %s is not NOT HELD", id)
				}
			}
			if !slices.ContainsFunc(rows, func(r drill.Result) bool { return r.ID == "net:unix-path" && r.Status == drill.Pass }) {
				t.Errorf("row net:unix-path is not PASS")
			}
			if n[drill.NotHeld] == 0 || !strings.Contains(r.Stderr, strconv.Itoa(n[drill.NotHeld])+" NOT HELD") {
				t.Errorf("the summary does not count NOT HELD (%d):\n%s", n[drill.NotHeld], r.Stderr)
			}
			if strings.Contains(r.Stderr, "NOT HELD: unix socket mediation") {
				t.Errorf("the launch says unix sockets are not mediated:\n%s", r.Stderr)
			}
		})
	}
}

// With the mediation off (a test build, BOX_UNSAFE_OFF=sockets) the same drill in the
// Landlock mode reaches the drill's host socket in the working directory: BREACH, not
// NOT HELD.
func TestIsolationLandlockSocketsOff(t *testing.T) {
	testenv.RequireRoot(t)
	if abi := bwrap.LandlockABI(); abi < 4 {
		testenv.Skip(t, "requires Landlock ABI 4, this kernel has "+strconv.Itoa(abi))
	}
	w := boxtest.NewWorld(t)
	w.WithProtectionOff(t, "sockets")
	rows, r := landlockDrill(t, w, "seccomp", "--group", "network") // the group of the row judged
	if r.Code == 0 {
		t.Errorf("box drill: exit 0 with a breach")
	}
	if !slices.ContainsFunc(rows, func(r drill.Result) bool { return r.ID == "net:unix-path" && r.Status == drill.Breach }) {
		t.Errorf("with the mediation off, row net:unix-path is not BREACH")
	}
}

// landlockDrill runs box drill --isolation landlock --json (and args) in the container
// case mode.
// RLIMIT_NPROC counts all the user's tasks (NOT HELD: no cgroup), and other tests fork
// as the same user: the profile's pids is the user's tasks now and 2000 more, so the
// fork probe forks about 2000, not the hard limit (tens of thousands on a loaded host).
func landlockDrill(t *testing.T, w *boxtest.World, mode string, args ...string) ([]drill.Result, boxtest.Result) {
	pids := min(uint64(userTasks(w.UID))+2000, nprocMax())
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "pids = "+strconv.FormatUint(pids, 10)+"\n")
	r := inCase(w, mode, append([]string{"drill", "-p", "ll", "--isolation", "landlock", "--json"}, args...)...)
	t.Logf("box drill --isolation landlock (%s): exit %d\n%s%s", mode, r.Code, r.Stdout, r.Stderr)
	var rows []drill.Result
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil {
		t.Fatalf("box drill --json: %v", err)
	}
	return rows, r
}

// userTasks counts uid's tasks (threads included: RLIMIT_NPROC counts them).
func userTasks(uid int) int {
	n := 0
	for _, pid := range userPids(uid) { // landlock_signal_live_test.go
		tasks, _ := os.ReadDir("/proc/" + pid + "/task")
		n += len(tasks)
	}
	return n
}

// nprocMax is RLIMIT_NPROC's hard limit (the user inherits the test's), capped at the
// largest pids a profile takes.
func nprocMax() uint64 {
	var rl syscall.Rlimit
	syscall.Getrlimit(unix.RLIMIT_NPROC, &rl)
	return min(rl.Max, 4194304)
}

// auto where the cheap facts say nothing and bwrap still cannot start (the mount-refusing
// filter: bwrap gets its namespace, then fails, as under a profile confining it): the
// trial runs before the session, the cause is not one box recognises, so auto refuses
// aloud (exit 125, the command never ran) instead of running weaker.
func TestIsolationAutoTrial(t *testing.T) {
	testenv.RequireRoot(t)
	w := boxtest.NewWorld(t)
	r := inCase(w, "mount", "run", "--isolation", "auto", "-y", "--", "sh", "-c", "echo RAN > ran")
	t.Logf("box run --isolation auto, mount refused: exit %d\n%s", r.Code, r.Stderr)
	if r.Code != 125 || !strings.Contains(r.Stderr, `isolation "auto" does not fall back`) || !strings.Contains(r.Stderr, "a trial sandbox failed") {
		t.Errorf("exit %d\n%s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(w.Proj + "/ran"); err == nil {
		t.Error("the command ran")
	}
}
