package vm_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
)

// TestSiblingIDsLive: every container box runs on a host uid range of its own
// (security.idmap.isolated), so box A's root is not box B's root to the host kernel.
// With the protection off (BOX_UNSAFE_OFF=idmap-isolated, the range every box shared
// before) the drill's rows report BREACH: the ranges overlap, and A holding file
// descriptors in flight over unix sockets makes the kernel refuse B's pass of one
// (ETOOMANYREFS: one count per host user). A clone and an import, of a box minted with
// and without the protection, get a range of their own too, their files shifted to it.
func TestSiblingIDsLive(t *testing.T) {
	t.Parallel() // its own lab: see live_test.go
	r := newVMRig(t)
	rows := func(t *testing.T, a, b string) map[string]drill.Result {
		t.Helper()
		out := map[string]drill.Result{}
		for _, row := range drill.SiblingIDRows(r.ctx, r.client, r.box, a, b) {
			t.Logf("%s %s: %s: %s %s", a, b, row.ID, row.Status, row.Observed)
			out[row.ID] = row
		}
		return out
	}
	want := func(t *testing.T, got map[string]drill.Result, status drill.Status) {
		t.Helper()
		for _, id := range []string{"sibling:host-uid", "sibling:fds-in-flight"} {
			if got[id].Status != status {
				t.Errorf("%s: %s (%s), want %s", id, got[id].Status, got[id].Observed, status)
			}
		}
	}
	// rootOwns: the box's own files are its root's (a shift to a new range that failed
	// shows them as nobody, 65534).
	rootOwns := func(t *testing.T, name string) {
		t.Helper()
		if out := strings.TrimSpace(r.rootExec(name, "stat", "-c", "%u:%g", "/", "/root", "/etc/passwd", "/usr/bin/sudo")); out != "0:0\n0:0\n0:0\n0:0" {
			t.Errorf("%s: owners of /, /root, /etc/passwd, sudo: %q", name, out)
		}
	}

	r.ok(t, "new", "--name", "a", "--container")
	r.ok(t, "new", "--name", "b", "--container")
	for _, n := range []string{"a", "b"} {
		if inst, _, err := r.client.Instance(r.ctx, n); err != nil || inst.Config[incus.KeyIsolatedIDs] != "true" {
			t.Errorf("%s: %s = %q (%v)", n, incus.KeyIsolatedIDs, inst.Config[incus.KeyIsolatedIDs], err)
		}
	}
	t.Run("two boxes: disjoint host ranges, A's fds in flight do not count against B", func(t *testing.T) {
		want(t, rows(t, "a", "b"), drill.Pass)
	})

	unsafe := unsafeBoxBinary(t)
	off := r.runAs(unsafe, []string{"BOX_UNSAFE_OFF=idmap-isolated"})
	off(t, "new", "--name", "ua", "--container")
	off(t, "new", "--name", "ub", "--container")
	t.Run("protection off: one shared range, the drill's rows report BREACH", func(t *testing.T) {
		want(t, rows(t, "ua", "ub"), drill.Breach)
	})

	// Measured, not a protection: RLIMIT_NPROC is counted per user namespace (since Linux
	// 5.14), so even on the shared range one box's processes of a uid do not spend
	// another's: ua's uid 4242 holds six processes, and ub's uid 4242, limited to five,
	// still forks two.
	t.Run("RLIMIT_NPROC is not shared, even on the shared range", func(t *testing.T) {
		as4242 := func(box, script string) (int, string, error) {
			var out bytes.Buffer
			code, err := r.client.Exec(r.ctx, box, incus.Exec{User: 4242, Group: 4242, Stdout: &out, Stderr: &out,
				Command: []string{"bash", "-c", script}})
			return code, out.String(), err
		}
		code, out, err := as4242("ua", `ulimit -u 20; for i in 1 2 3 4 5 6; do sleep 120 >/dev/null 2>&1 & done; grep -l '^Uid:[[:space:]]*4242' /proc/[0-9]*/status 2>/dev/null | wc -l`)
		if n, _ := strconv.Atoi(strings.TrimSpace(out)); err != nil || code != 0 || n < 6 {
			t.Fatalf("ua: uid 4242 holds six sleeps: exit %d, %v: %q", code, err, out)
		}
		defer func() { _, _, _ = as4242("ua", "kill -9 -1") }()
		code, out, err = as4242("ub", "ulimit -u 5; sleep 0.1 & sleep 0.1 & wait; echo done")
		if err != nil || code != 0 || !strings.Contains(out, "done") || strings.Contains(out, "fork") {
			t.Errorf("ub: uid 4242 (limit 5) forks two while ua's uid 4242 holds six: exit %d, %v: %q", code, err, out)
		}
	})

	// A box on the shared range (minted before box set the key) is said aloud at each
	// verb that runs it, with the fix; the fix gives it a range of its own.
	t.Run("a box on the shared range is named, and the hint's fix isolates it", func(t *testing.T) {
		const warning = "box: warning: box ub shares one host uid range with other container boxes"
		const hint = "box: hint: give it a range of its own while it is stopped: box stop ub && box incus ub -- config set {} security.idmap.isolated=true && box start ub"
		for _, n := range []string{"ub", "b"} {
			r.rootExec(n, "useradd", "--create-home", "--shell", "/bin/bash", "dev") // the lab image's blank has none
		}
		for _, args := range [][]string{{"exec", "ub", "--", "true"}, {"start", "ub"}, {"-q", "exec", "ub", "--", "true"}} {
			if res := r.ok(t, args...); !strings.Contains(res.stderr, warning) || !strings.Contains(res.stderr, hint) {
				t.Errorf("box %v: no warning and hint for the shared range:\n%s", args, res.stderr)
			}
		}
		if res := r.ok(t, "exec", "b", "--", "true"); strings.Contains(res.stderr, "warning") {
			t.Errorf("box exec b (its own range): %s", res.stderr)
		}
		r.ok(t, "stop", "ub")
		r.ok(t, "incus", "ub", "--", "config", "set", "{}", "security.idmap.isolated=true")
		r.ok(t, "start", "ub")
		if res := r.ok(t, "exec", "ub", "--", "true"); strings.Contains(res.stderr, "warning: box ub shares") {
			t.Errorf("after the fix, box exec ub still warns: %s", res.stderr)
		}
		want(t, rows(t, "ub", "b"), drill.Pass)
		rootOwns(t, "ub")
	})

	t.Run("a container on the shared range holds a box's own range", func(t *testing.T) {
		if got := rows(t, "a", "ua"); got["sibling:host-uid"].Status != drill.Breach {
			t.Errorf("sibling:host-uid of a and ua: %s (%s), want BREACH", got["sibling:host-uid"].Status, got["sibling:host-uid"].Observed)
		}
	})

	t.Run("a clone, of a box minted with and without the protection, gets its own range", func(t *testing.T) {
		r.ok(t, "new", "--name", "ca", "--from", "a")
		r.ok(t, "new", "--name", "cu", "--from", "ua")
		want(t, rows(t, "a", "ca"), drill.Pass)
		want(t, rows(t, "cu", "b"), drill.Pass)
		rootOwns(t, "ca")
		rootOwns(t, "cu")
	})

	t.Run("an import of an export made without the protection gets its own range", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "ua.tar.gz")
		r.ok(t, "stop", "ua")
		r.ok(t, "export", "ua", file)
		r.ok(t, "import", file, "--name", "iu")
		inst, _, err := r.client.Instance(r.ctx, "iu")
		if err != nil || inst.Config[incus.KeyIsolatedIDs] != "true" {
			t.Fatalf("iu: %s = %q (%v)", incus.KeyIsolatedIDs, inst.Config[incus.KeyIsolatedIDs], err)
		}
		want(t, rows(t, "iu", "b"), drill.Pass)
		rootOwns(t, "iu")
		var m []map[string]any
		if err := json.Unmarshal([]byte(inst.Config["volatile.idmap.next"]), &m); err != nil || len(m) == 0 {
			t.Errorf("iu: volatile.idmap.next %q", inst.Config["volatile.idmap.next"])
		}
	})
}

// runAs runs another box binary with extra environment, requiring exit 0.
func (r *vmRig) runAs(bin string, extra []string) func(t *testing.T, args ...string) {
	return func(t *testing.T, args ...string) {
		t.Helper()
		saved := r.box
		r.box = bin
		defer func() { r.box = saved }()
		if res := r.runEnv(t, extra, args...); res.code != 0 {
			t.Fatalf("box %v: exit %d: %s", args, res.code, res.stderr)
		}
	}
}

// TestOwnRangeLive: incusd picks an isolated container's range under a lock but writes
// it after, so two containers made at the same moment can get one range (seen: the vm
// drill's two boxes, minted side by side, BREACHed sibling:host-uid). The clash is made
// here by hand (y given x's range in its volatile keys, as the race leaves it): started
// as it is, y runs on x's host uids; after vm.OwnRange, which every mint, clone and
// import runs before the first start, it runs on a range of its own.
func TestOwnRangeLive(t *testing.T) {
	t.Parallel() // its own lab: see live_test.go
	r := newVMRig(t)
	iso := map[string]string{incus.KeyIsolatedIDs: "true"}
	create := func(name string) *incus.Instance {
		t.Helper()
		req := incus.InstancesPost{Name: name, Type: incus.TypeContainer,
			Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Profiles: []string{incuslab.Profile}, Config: iso}
		if err := r.client.Create(r.ctx, req); err != nil {
			t.Fatal(err)
		}
		inst, _, err := r.client.Instance(r.ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	idmap := func(name, key string) []incus.IDRange {
		t.Helper()
		inst, _, err := r.client.Instance(r.ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := incus.ParseIDMap(inst.Config[key])
		if err != nil {
			t.Fatalf("%s: %s: %v", name, key, err)
		}
		return m
	}
	x := create("x")
	clash := func(name string) {
		t.Helper()
		create(name)
		if err := r.client.SetConfig(r.ctx, name, map[string]string{
			incus.KeyIDMapNext: x.Config[incus.KeyIDMapNext], incus.KeyIDMapBase: x.Config[incus.KeyIDMapBase]}); err != nil {
			t.Fatalf("give %s x's range: %v", name, err)
		}
		if _, _, ok := incus.UIDOverlap(idmap(name, incus.KeyIDMapNext), idmap("x", incus.KeyIDMapNext)); !ok {
			t.Fatalf("%s does not hold x's range: the clash was not made", name)
		}
	}
	start := func(name string) {
		t.Helper()
		if err := r.client.Start(r.ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	start("x")

	t.Run("without OwnRange the clash runs: one host range", func(t *testing.T) {
		clash("u")
		start("u")
		if _, _, ok := incus.UIDOverlap(idmap("u", incus.KeyIDMapCurrent), idmap("x", incus.KeyIDMapCurrent)); !ok {
			t.Errorf("u started on x's range but runs apart from it: the clash is not what the race leaves")
		}
	})
	t.Run("OwnRange parts them before the first start", func(t *testing.T) {
		clash("y")
		if err := vm.OwnRange(r.ctx, r.client, "y"); err != nil {
			t.Fatal(err)
		}
		start("y")
		for _, other := range []string{"x", "u"} {
			if a, b, ok := incus.UIDOverlap(idmap("y", incus.KeyIDMapCurrent), idmap(other, incus.KeyIDMapCurrent)); ok {
				t.Errorf("y runs on host uids %d+%d, %s on %d+%d", a.Hostid, a.Maprange, other, b.Hostid, b.Maprange)
			}
		}
		if out := strings.TrimSpace(r.rootExec("y", "stat", "-c", "%u:%g", "/", "/root", "/etc/passwd")); out != "0:0\n0:0\n0:0" {
			t.Errorf("y: owners of /, /root, /etc/passwd: %q", out)
		}
	})
	t.Run("a box without a clash is left as it is", func(t *testing.T) {
		z := create("z")
		if err := vm.OwnRange(r.ctx, r.client, "z"); err != nil {
			t.Fatal(err)
		}
		if after, _, err := r.client.Instance(r.ctx, "z"); err != nil || after.Config[incus.KeyIDMapBase] != z.Config[incus.KeyIDMapBase] {
			t.Errorf("z: %s %q -> %q (%v)", incus.KeyIDMapBase, z.Config[incus.KeyIDMapBase], after.Config[incus.KeyIDMapBase], err)
		}
	})
}
