package protect

import (
	"os"
	"path/filepath"
	"testing"
)

// Hold: the first run in is alone, a second is not; placeholders are known by the
// registry and their exact content, and the last one out removes them.
func TestHoldPlaceholders(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "data", "tree.lock")
	gd := filepath.Join(dir, "proj", ".git")
	os.MkdirAll(gd, 0o755)
	cd := filepath.Join(gd, "commondir")
	set := Set{Protected: []Path{{Path: cd, Absent: true, Placeholder: SelfCommonDir}}}

	a, err := Enter(lock)
	if err != nil || !a.Alone() {
		t.Fatalf("first: %v alone=%v", err, a != nil && a.Alone())
	}
	a.Entered()
	if _, _, err := Place(set, lock); err != nil {
		t.Fatal(err)
	}
	b, err := Enter(lock)
	if err != nil || b.Alone() {
		t.Fatalf("second: %v alone=%v", err, b.Alone())
	}
	b.Entered()
	var known, sameNameElsewhere bool
	a.Leave(func(placed map[string]bool) {
		known = IsPlaceholder(cd, placed)
		other := filepath.Join(dir, "commondir")
		os.WriteFile(other, []byte(".\n"), 0o644)
		sameNameElsewhere = IsPlaceholder(other, placed)
	})
	if !known || sameNameElsewhere {
		t.Errorf("known=%v, same name elsewhere known=%v", known, sameNameElsewhere)
	}
	if _, err := os.Stat(cd); err != nil {
		t.Errorf("removed while another run holds the tree: %v", err)
	}
	os.WriteFile(cd, []byte("../x\n"), 0o644) // no longer box's
	b.Leave(func(placed map[string]bool) {
		if IsPlaceholder(cd, placed) {
			t.Error("a changed placeholder is known")
		}
	})
	if _, err := os.Stat(cd); err != nil {
		t.Errorf("the last run out removed what is no longer a placeholder: %v", err)
	}
	os.WriteFile(cd, []byte(".\n"), 0o644)
	c, _ := Enter(lock)
	if !c.Alone() {
		t.Error("not alone after both left")
	}
	c.Leave(nil)
}
