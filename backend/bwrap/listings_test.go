package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

// The audit's snapshot before the run reuses the protected set's scan's listings
// (Tree.Listings) of the directories unchanged since, and sees what reading them all
// sees: links to directories are not entered either way, a repository made after the
// scan in a directory it listed is found, and the scan's bound (a deeper directory is
// listed by the snapshot itself) changes nothing.
func TestScanListingsAudit(t *testing.T) {
	testenv.RequireTool(t, "git")
	wd := t.TempDir()
	git := gitAt(t, wd)
	git(wd, "init", "-q")
	for _, d := range []string{"a/b/c/d/e/f/g/h/i/j/k/l", "vendor/lib", "outside/repo"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
	}
	git(filepath.Join(wd, "vendor/lib"), "init", "-q")
	git(filepath.Join(wd, "a/b/c/d/e/f/g/h/i/j/k/l"), "init", "-q") // past the scan's depth
	git(filepath.Join(wd, "outside/repo"), "init", "-q")
	os.Symlink(filepath.Join(wd, "outside"), filepath.Join(wd, "link"))
	os.WriteFile(filepath.Join(wd, "file"), nil, 0o644)
	waitTreeOlder(t, wd)

	tree := protect.Scan(wd, wd, protect.Options{}, nil)
	if tree.Listings.Len() < 10 {
		t.Fatalf("the scan kept %d listings", tree.Listings.Len())
	}
	git(filepath.Join(wd, "a/b"), "init", "-q", "planted")

	in := postrun.Input{Workdir: wd, Home: wd}
	full := postrun.Take(in)
	in.Listings = tree.Listings
	reused := postrun.Take(in)
	if n := reused.Listings().Len(); n == 0 {
		t.Fatal("the snapshot reused none of the scan's listings")
	}
	keys := func(s *postrun.Snapshot) []string {
		var out []string
		for k := range s.Repos {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(keys(reused), keys(full)) {
		t.Fatalf("repositories reusing the scan's listings %v, reading all %v", keys(reused), keys(full))
	}
	for _, dot := range []string{"a/b/planted/.git", "a/b/c/d/e/f/g/h/i/j/k/l/.git", "outside/repo/.git"} {
		if reused.Repos[filepath.Join(wd, dot)] == nil {
			t.Errorf("missed %s", dot)
		}
	}
	if reused.Repos[filepath.Join(wd, "link/repo/.git")] != nil {
		t.Error("the walk entered a link")
	}
}

// waitTreeOlder waits until the tree under root is old enough for a walk to keep its listings.
func waitTreeOlder(t *testing.T, root string) {
	t.Helper()
	if err := dirlist.WaitOlder(root, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// The protected set's scan of a run reuses the listings the last run kept
// (protect.ScanAfter, dirlist.Load) and learns exactly what reading every directory
// learns: the same repositories, tops and candidates' kinds (a file, a link, a fifo, a
// directory), also for a repository cloned since into a directory whose listing was
// kept (its times set back), and for a directory the last run's walk listed (the
// audit's walks enter node_modules, the scan does not).
func TestScanAfterStoredListings(t *testing.T) {
	testenv.RequireTool(t, "git")
	wd := t.TempDir()
	git := gitAt(t, wd)
	git(wd, "init", "-q")
	for _, d := range []string{"vendor/a", "vendor/b", "src/x/y", "node_modules/dep/lib", ".vscode"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
	}
	git(filepath.Join(wd, "vendor/a"), "init", "-q")
	os.WriteFile(filepath.Join(wd, ".envrc"), []byte("use nix\n"), 0o644)
	os.Symlink("src", filepath.Join(wd, ".mise.toml"))
	unix.Mkfifo(filepath.Join(wd, "vendor/a/.envrc"), 0o644)
	waitTreeOlder(t, wd)
	in := postrun.Input{Workdir: wd, Home: wd}
	path := filepath.Join(t.TempDir(), "listings")
	if err := postrun.Take(in).Listings().Save(path); err != nil {
		t.Fatal(err)
	}
	same := func(when string) {
		t.Helper()
		stored := dirlist.Load(path)
		if stored.Len() < 8 {
			t.Fatalf("%s: %d listings stored", when, stored.Len())
		}
		want, got := protect.Scan(wd, wd, protect.Options{}, nil), protect.ScanAfter(stored, wd, wd, protect.Options{}, nil)
		want.Listings, got.Listings = nil, nil
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: the scan reusing the stored listings learnt\n%+v\nreading them all\n%+v", when, got, want)
		}
		if _, ok := stored.Reuse(filepath.Join(wd, "node_modules/dep"), nil); !ok {
			t.Errorf("%s: no listing of node_modules/dep stored", when)
		}
	}
	same("unchanged")
	fi, _ := os.Stat(filepath.Join(wd, "vendor"))
	git(filepath.Join(wd, "vendor"), "init", "-q", "c")
	os.Chtimes(filepath.Join(wd, "vendor"), fi.ModTime(), fi.ModTime())
	same("a clone since")
	if tr := protect.ScanAfter(dirlist.Load(path), wd, wd, protect.Options{}, nil); !slices.Contains(tr.Tops, filepath.Join(wd, "vendor/c")) {
		t.Errorf("the scan missed the repository cloned since: tops %v", tr.Tops)
	}
}

// gitAt runs git as a test's with home as HOME, failing t on an error.
func gitAt(t *testing.T, home string) func(dir string, args ...string) {
	return func(dir string, args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir, c.Env = dir, []string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
}
