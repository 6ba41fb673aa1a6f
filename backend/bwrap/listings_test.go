package bwrap

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	git := func(dir string, args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir, c.Env = dir, []string{"HOME=" + wd, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
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

// waitTreeOlder waits until every directory under root was changed more than
// dirlist.Margin ago (a tree made by a test is younger than one the operator works in).
func waitTreeOlder(t *testing.T, root string) {
	t.Helper()
	var newest int64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err == nil && d.IsDir() && unix.Lstat(p, &st) == nil {
			newest = max(newest, st.Ctim.Nano())
		}
		return nil
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts)
		if ts.Nano() > newest+dirlist.Margin+int64(10*time.Millisecond) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the clock did not pass the tree's change times")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
