package dirlist

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// A cache saved by one run and loaded by the next gives back exactly the listings of the
// directories unchanged since, and none of a changed one; the file is the operator's
// alone.
func TestStoreRoundTrip(t *testing.T) {
	root := t.TempDir()
	same, changed := filepath.Join(root, "same"), filepath.Join(root, "changed")
	for _, d := range []string{same + "/x", changed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(same, "f"), nil, 0o644)
	c := newAt(coarseNow() + 10*Margin)
	want := map[string][]Ent{same: list(t, c, same), changed: list(t, c, changed), root: list(t, c, root)}
	if c.Len() != 3 {
		testenv.Skip(t, root+" is on a filesystem dirlist does not trust: nothing is kept there")
	}
	path := filepath.Join(t.TempDir(), "store", "listings")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved cache: %v, mode %v; want 0600", err, fi.Mode())
	}
	// Between the runs: an entry made in one directory, its times set back as they were
	// (a cache keyed on the modification time would be fooled).
	fi, _ := os.Stat(changed)
	os.WriteFile(filepath.Join(changed, "hook"), nil, 0o755)
	os.Chtimes(changed, fi.ModTime(), fi.ModTime())

	loaded := Load(path)
	if loaded.Len() != 3 {
		t.Fatalf("loaded %d listings, saved 3", loaded.Len())
	}
	next := newAt(coarseNow() + 10*Margin)
	for d, w := range want {
		ents, ok := loaded.Reuse(d, next)
		switch {
		case d == changed && ok:
			t.Errorf("%s changed between the runs, yet its listing %v was given back", d, names(ents))
		case d != changed && !ok:
			t.Errorf("%s did not change, yet its listing was not given back", d)
		case ok && !slices.Equal(ents, w):
			t.Errorf("%s: given back %v, listed %v", d, ents, w)
		}
	}
	// The next walk's cache asks its base (the loaded one) for what it did not visit.
	if _, ok := New(loaded).Reuse(same, nil); !ok {
		t.Error("a cache made after the loaded one did not reuse its listing of an unchanged directory")
	}
}

// Anything but a whole file Save wrote is no cache: the walk lists every directory.
func TestLoadRefuses(t *testing.T) {
	root := t.TempDir()
	c := newAt(coarseNow() + 10*Margin)
	list(t, c, root)
	os.WriteFile(filepath.Join(root, "f"), nil, 0o644)
	c.dirs[root] = listing{st: Stamp{dev: 1, ino: 2, ctime: 3, keep: true}, ents: []Ent{{"f", 8}, {"g", 4}}}
	path := filepath.Join(t.TempDir(), "l")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	if Load(path).Len() != 1 {
		t.Fatal("the whole file did not load")
	}
	try := func(what string, b []byte) {
		t.Helper()
		os.WriteFile(path, b, 0o600)
		if got := Load(path); got != nil {
			t.Errorf("%s: loaded %d listings", what, got.Len())
		}
	}
	// (A file cut at a listing's end holds fewer listings: fewer reused, nothing wrong.)
	for n := len(storeMagic) + 1; n < len(good); n++ {
		try("cut short", good[:n])
	}
	try("another format", append([]byte("boxdirl0"), good[len(storeMagic):]...))
	bad := func(dir string, name string) []byte {
		b := []byte(storeMagic)
		b = appendString(b, dir)
		b = append(b, 1, 2, 6, 1, 8)
		return appendString(b, name)
	}
	os.WriteFile(path, bad(root, "ok"), 0o600)
	if Load(path).Len() != 1 {
		t.Fatal("a well-formed hand-made file did not load")
	}
	try("a name with a slash", bad(root, "a/b"))
	try("a name ..", bad(root, ".."))
	try("an empty name", bad(root, ""))
	try("a relative directory", bad("rel/dir", "ok"))
	try("an unclean directory", bad(root+"/../x", "ok"))
	if Load(filepath.Join(root, "none")) != nil || Load("") != nil {
		t.Error("no file loaded as a cache")
	}
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if Load(path) != nil {
		t.Error("a directory loaded as a cache")
	}
	if err := c.Save(""); err != nil {
		t.Error(err)
	}
}

// The store does not grow with every directory ever run in: the first save of a new
// directory's listings removes those not written for StaleAfter and the temporary files
// a killed run left; recent ones stay.
func TestSavePrunesStale(t *testing.T) {
	store := t.TempDir()
	old := time.Now().Add(-StaleAfter - time.Hour)
	for name, when := range map[string]time.Time{"stale": old, "recent": time.Now().Add(-time.Hour), ".listings-1": time.Now().Add(-2 * tempStaleAfter), ".listings-2": time.Now()} {
		p := filepath.Join(store, name)
		if err := os.WriteFile(p, []byte(storeMagic), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, when, when)
	}
	c := newAt(coarseNow() + 10*Margin)
	list(t, c, t.TempDir())
	if err := c.Save(filepath.Join(store, "new")); err != nil {
		t.Fatal(err)
	}
	var left []string
	ents, _ := os.ReadDir(store)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{".listings-2", "new", "recent"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
}
