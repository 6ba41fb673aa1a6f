package dirlist

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"

	"golang.org/x/sys/unix"
)

// list reads dir as a walk does, through c: the stamp before the entries, kept whole.
func list(t *testing.T, c *Cache, dir string) []Ent {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	st := c.Stat(fd)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []Ent
	for _, e := range ents {
		typ := uint8(unix.DT_REG)
		if e.IsDir() {
			typ = unix.DT_DIR
		}
		out = append(out, Ent{e.Name(), typ})
	}
	c.Put(dir, st, out)
	return out
}

func names(ents []Ent) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name)
	}
	slices.Sort(out)
	return out
}

// A kept listing is given back only while its directory is the one it was read from,
// unchanged: an entry made, removed or renamed, a chmod, or another directory renamed
// into its place each make the next walk list it again.
func TestReuseOnlyUnchanged(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same, added, removed, chmodded, swapped, renamedOut := mk("same/x"), mk("added"), mk("removed/y"), mk("chmodded"), mk("swapped"), mk("renamed")
	other := mk("other/z")
	os.WriteFile(filepath.Join(swapped, "was"), nil, 0o644)
	// A walk that began well after the tree was made (see newAt): every listing is kept.
	c := newAt(coarseNow() + 10*Margin)
	dirs := []string{same, added, removed, chmodded, swapped, renamedOut, filepath.Dir(removed), filepath.Dir(other)}
	want := map[string][]Ent{}
	for _, d := range dirs {
		want[d] = list(t, c, d)
	}
	if !c.trusted[devOf(t, root)] {
		testenv.Skip(t, root+" is on a filesystem dirlist does not trust: nothing is kept there")
	}
	if c.Len() != len(dirs) {
		t.Fatalf("kept %d listings, want %d", c.Len(), len(dirs))
	}

	os.WriteFile(filepath.Join(added, "new"), nil, 0o644)
	os.Remove(removed)
	os.Chmod(chmodded, 0o700)
	os.Rename(swapped, filepath.Join(root, "swapped.old"))
	os.Rename(filepath.Join(root, "other"), swapped) // another inode under the same name
	os.Rename(renamedOut, filepath.Join(root, "renamed.moved"))
	gone := map[string]bool{added: true, removed: true, chmodded: true, swapped: true, renamedOut: true,
		filepath.Dir(removed): true, filepath.Dir(other): true}
	next := newAt(coarseNow() + 10*Margin)
	for _, d := range dirs {
		ents, ok := c.Reuse(d, next)
		switch {
		case gone[d] && ok:
			t.Errorf("%s changed, yet its listing %v was given back", d, names(ents))
		case !gone[d] && !ok:
			t.Errorf("%s did not change, yet its listing was not given back", d)
		case ok && !slices.Equal(names(ents), names(want[d])):
			t.Errorf("%s: given back %v, listed %v", d, names(ents), names(want[d]))
		}
	}
	// The unchanged ones are carried to the next walk's cache, the rest not.
	if next.Len() != 1 {
		t.Errorf("carried %d listings to the next walk, want 1 (same/x)", next.Len())
	}
}

// A directory changed less than Margin before the walk began is never kept: a change
// in the same clock tick (or the same second, on a filesystem stamping whole seconds)
// as its listing would leave its change time as it was.
func TestRecentNotKept(t *testing.T) {
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "f"), nil, 0o644)
	c := New(nil)
	list(t, c, d)
	if c.Len() != 0 {
		t.Fatalf("a directory changed just now was kept")
	}
	if _, ok := c.Reuse(d, nil); ok {
		t.Fatal("a directory changed just now was given back")
	}
}

// The nil cache keeps nothing and gives nothing back (a walk without an earlier one).
func TestNilCache(t *testing.T) {
	var c *Cache
	d := t.TempDir()
	list(t, c, d)
	if _, ok := c.Reuse(d, nil); ok || c.Len() != 0 {
		t.Fatal("the nil cache gave a listing back")
	}
}

func devOf(t *testing.T, p string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Dev
}

// The look-ahead's stamps (Ahead) judge a kept listing as Reuse's own lstat does: a
// directory changed before the walk began is listed again, an unchanged one given back,
// whether the other thread stamped it already or Reuse does it itself.
func TestAheadOnlyUnchanged(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i := range 2 * aheadMin {
		d := filepath.Join(root, "d", string(rune('a'+i/26)), string(rune('a'+i%26)))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	c := newAt(coarseNow() + 10*Margin)
	for _, d := range dirs {
		list(t, c, d)
	}
	if c.Len() != len(dirs) {
		testenv.Skip(t, root+" is on a filesystem dirlist does not trust: nothing is kept there")
	}
	changed := map[string]bool{}
	for i, d := range dirs {
		switch i % 3 {
		case 1:
			os.WriteFile(filepath.Join(d, "new"), nil, 0o644)
			changed[d] = true
		case 2:
			os.Rename(d, d+".old") // gone: nothing there to reuse
			changed[d] = true
		}
	}
	for _, wait := range []bool{true, false} {
		next := newAt(coarseNow() + 10*Margin)
		stop := next.Ahead(c)
		if next.ahead == nil {
			t.Fatal("no look-ahead for a cache of many listings")
		}
		for i := range next.ahead.state {
			for wait && next.ahead.state[i].Load() != aheadDone {
				time.Sleep(time.Millisecond)
			}
		}
		for _, d := range dirs {
			_, ok := c.Reuse(d, next)
			if ok == changed[d] {
				t.Errorf("stamped ahead (waited %v): %s changed %v, given back %v", wait, d, changed[d], ok)
			}
		}
		stop()
	}
}
