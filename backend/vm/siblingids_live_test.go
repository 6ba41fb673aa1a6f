package vm_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill"
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
