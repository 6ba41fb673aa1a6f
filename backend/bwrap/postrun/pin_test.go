package postrun

import (
	"os"
	"path/filepath"
	"testing"
)

// A directory on the audit's path swapped for a link (by a sandbox still running on the
// tree) must not send a mode change, a rewrite or a move to the link's target: the
// hostile review's race, with the swap already done (the window's worst case).
func TestPinnedWritesNeverFollowLinks(t *testing.T) {
	tree, victim := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(victim, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, "config"), []byte("[core]\n\tfsmonitor = x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(tree, "l")); err != nil {
		t.Fatal(err)
	}
	var a access
	if err := a.grant(filepath.Join(tree, "l", "d"), 0o077); err != nil {
		t.Fatalf("grant through a link: %v (want left alone, no error)", err)
	}
	if fi, _ := os.Stat(filepath.Join(victim, "d")); fi.Mode().Perm() != 0o700 {
		t.Errorf("grant changed the link's target's mode: %v", fi.Mode())
	}
	a.saved = append(a.saved, savedMode{filepath.Join(tree, "l", "d"), 0o777})
	a.restore()
	if fi, _ := os.Stat(filepath.Join(victim, "d")); fi.Mode().Perm() != 0o700 {
		t.Errorf("the link's target's mode changed: %v", fi.Mode())
	}
	// The final component a link: left alone too.
	if err := os.Symlink(filepath.Join(victim, "d"), filepath.Join(tree, "d2")); err != nil {
		t.Fatal(err)
	}
	a.grant(filepath.Join(tree, "d2"), 0o077)
	if fi, _ := os.Stat(filepath.Join(victim, "d")); fi.Mode().Perm() != 0o700 {
		t.Errorf("a link's target's mode changed: %v", fi.Mode())
	}
	// Moves and rewrites: refused on the way, never done in the target.
	q := &quarantineDir{base: t.TempDir()}
	if _, err := q.moveTree(filepath.Join(tree, "l", "config"), filepath.Join(q.base, "x")); err == nil {
		t.Errorf("moved a file through a link")
	}
	if _, err := os.Stat(filepath.Join(victim, "config")); err != nil {
		t.Errorf("the link's target's file moved: %v", err)
	}
	if _, err := readRegularNoFollow(filepath.Join(tree, "d2"), 1<<20); err == nil {
		t.Errorf("read through a final link")
	}
	// A real path still works.
	if err := os.Mkdir(filepath.Join(tree, "real"), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := a.grant(filepath.Join(tree, "real"), 0o500); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(tree, "real")); fi.Mode().Perm() != 0o500 {
		t.Errorf("grant on a real directory: %v", fi.Mode())
	}
	a.restore()
	if fi, _ := os.Stat(filepath.Join(tree, "real")); fi.Mode().Perm() != 0 {
		t.Errorf("restore on a real directory: %v", fi.Mode())
	}
}
