package incuslab

import (
	"os"
	"path/filepath"
	"testing"
)

// Windows are disjoint slices of root's range, one per holder; a released one is taken
// again; a range that does not read, or gids that differ from uids, are refused.
func TestIDWindows(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "subid")
	os.WriteFile(sub, []byte("boxtest:100000:65536\nroot:1000000:1000000000\n"), 0o644)
	locks := filepath.Join(dir, "locks")
	a, err := takeIDWindow(locks, sub, sub)
	if err != nil {
		t.Fatal(err)
	}
	b, err := takeIDWindow(locks, sub, sub)
	if err != nil {
		t.Fatal(err)
	}
	if a.Start != 1000000 || a.Size%65536 != 0 || a.Size < minWindow || b.Start < a.Start+a.Size || b.Start+b.Size > 1000000+1000000000 {
		t.Errorf("windows %+v and %+v: not disjoint slices of root's range", *a, *b)
	}
	if got := a.entry(); got != "root:1000000:31195136\n" {
		t.Errorf("entry %q", got)
	}
	a.release()
	c, err := takeIDWindow(locks, sub, sub)
	if err != nil || c.Start != a.Start {
		t.Errorf("the released window was not taken again: %+v %v", c, err)
	}
	b.release()
	c.release()

	other := filepath.Join(dir, "subgid")
	for name, body := range map[string]string{
		"no root":   "boxtest:100000:65536\n",
		"garbage":   "root:x:65536\n",
		"too small": "root:1000000:65536\n",
		"differs":   "root:2000000:1000000000\n",
	} {
		os.WriteFile(other, []byte(body), 0o644)
		uids := other
		if name == "differs" {
			uids = sub
		}
		if w, err := takeIDWindow(locks, uids, other); err == nil {
			t.Errorf("%s: window %+v given", name, *w)
			w.release()
		}
	}
	// All windows held: a clear error, not a shared one.
	var held []*idWindow
	for range idWindows {
		w, err := takeIDWindow(locks, sub, sub)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, w)
	}
	if w, err := takeIDWindow(locks, sub, sub); err == nil {
		t.Errorf("a window beyond the %d: %+v", idWindows, *w)
	}
	for _, w := range held {
		w.release()
	}
}
