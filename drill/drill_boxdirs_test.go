package drill_test

// The drill's box-state rows (hostile review, session 16): the sandbox writes into box's
// own directories. Its home is a tmpfs of its own, so by default nothing reaches the host
// (PASS); a profile that mounts ~/.cache read-write (to share build caches) is refused,
// since it holds box's cache, where a dev shell's shellHook is kept; with that refusal
// off in a test build, the write lands in box's cache on the host (BREACH).

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill"
)

const boxCacheRow = "write:box:~/.cache/box"

func TestDrillBoxCacheRow(t *testing.T) {
	w, l := labWorld(t)
	w.write(filepath.Join(w.home, ".cache", "box", "devshell", ".keep"), "")
	w.write(filepath.Join(w.home, ".config/box/profiles/caches.toml"), "[[mounts]]\npath = \"~/.cache\"\nmode = \"rw\"\n")
	r := w.drill(l, "--network", "none", "--group", "writes")
	t.Logf("box drill (exit %d): %s %q", r.code, r.rows[boxCacheRow].Status, r.rows[boxCacheRow].Observed)
	r.want(t, boxCacheRow, drill.Pass)
	r.want(t, "write:box:~/.local/share/box", drill.Pass)
	r.want(t, "write:box:~/.config/box", drill.Pass)
	// The profile is refused: box's cache is box's own.
	if r := w.sh("true", "--profile", "caches"); r.code == 0 || !strings.Contains(r.stderr, "refusing a read-write mount "+filepath.Join(w.home, ".cache")+": it holds box's own files") {
		t.Errorf("the profile mounting ~/.cache read-write was not refused: exit %d\n%s", r.code, r.stderr)
	}
	w.withProtectionOff(t, "box-dirs")
	r = w.drill(l, "--profile", "caches", "--network", "none", "--group", "writes")
	t.Logf("box drill, refusal off (exit %d): %s %q", r.code, r.rows[boxCacheRow].Status, r.rows[boxCacheRow].Observed)
	r.want(t, boxCacheRow, drill.Breach)
	if ents, _ := filepath.Glob(filepath.Join(w.home, ".cache", "box", ".box-drill-*")); len(ents) != 0 {
		t.Errorf("left in box's cache: %v", ents)
	}
}
