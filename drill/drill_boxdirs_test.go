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

const gitCredViaMountRow = "secret:git-config-via-mount"

// The drill's git-config-via-mount row (hostile review, session 16): a profile that
// mounts the working directory's parent at another path shows the fixture's git config
// there, with the credential box binds a copy without at the config's own path. box
// refuses such a mount, so the row has nothing to probe (SKIP, with why); with the
// refusal off in a test build, the probe reads the credential there (BREACH).
func TestDrillGitCredViaMount(t *testing.T) {
	w, l := labWorld(t)
	r := w.drill(l, "--network", "none", "--group", "secrets")
	t.Logf("box drill (exit %d): %s %q", r.code, r.rows[gitCredViaMountRow].Status, r.rows[gitCredViaMountRow].Observed)
	r.want(t, gitCredViaMountRow, drill.Skip)
	r.want(t, "secret:git-config-credential", drill.Pass)
	w.write(filepath.Join(w.home, ".config/box/profiles/srcro.toml"), "[[mounts]]\npath = \""+filepath.Dir(w.proj)+"\"\ntarget = \"/src\"\n")
	if r := w.sh("true", "--profile", "srcro"); r.code != 125 || !strings.Contains(r.stderr, "it holds the working directory") {
		t.Errorf("the profile was not refused: exit %d\n%s", r.code, r.stderr)
	}
	w.withProtectionOff(t, "mount-overlap")
	r = w.drill(l, "--profile", "srcro", "--network", "none", "--group", "secrets")
	t.Logf("box drill, refusal off (exit %d): %s %q", r.code, r.rows[gitCredViaMountRow].Status, r.rows[gitCredViaMountRow].Observed)
	r.want(t, gitCredViaMountRow, drill.Breach)
	r.want(t, "secret:git-config-credential", drill.Pass)
}
