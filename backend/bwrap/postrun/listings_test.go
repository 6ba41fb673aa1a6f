package postrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"github.com/heavy-duty/box/internal/testenv"
)

// waitOlder waits until the tree under root is old enough for a walk to keep its listings.
func waitOlder(t *testing.T, root string) {
	t.Helper()
	if err := dirlist.WaitOlder(root, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

// The snapshot after a run reuses the listings of the directories the run did not
// change, and finds everything it would find reading them all: a repository made in a
// directory kept from before, one renamed into the place of a kept directory (another
// inode under the same name), a kept directory's own repository's config gaining an
// executing key (contents are always read), and a repository in a directory the before-
// walk listed itself (the protected set's scan's listings, Input.Listings, chain the same
// way).
func TestTakeReusesOnlyUnchanged(t *testing.T) {
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
	for _, d := range []string{"deep/a/b/c", "deep/p/q", "stash/q2/sub", "plain/x/y"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
	}
	git(filepath.Join(wd, "stash/q2/sub"), "init", "-q")
	git(filepath.Join(wd, "plain"), "init", "-q")
	waitOlder(t, wd)
	in := Input{Workdir: wd, Home: wd}
	before := Take(in)
	dirs := before.Listings().Len()
	if dirs < 10 {
		t.Fatalf("the walk kept %d listings of a tree of a dozen old directories", dirs)
	}

	// The run.
	git(filepath.Join(wd, "deep/a/b/c"), "init", "-q", "new")
	os.Rename(filepath.Join(wd, "deep/p/q"), filepath.Join(wd, "deep/q.old"))
	os.Rename(filepath.Join(wd, "stash/q2"), filepath.Join(wd, "deep/p/q"))
	git(wd, "config", "core.fsmonitor", "id; false")

	withListings := in
	withListings.Listings = before.Listings()
	reused := Take(withListings)
	full := Take(in)
	if n := reused.Listings().Len(); n == 0 || n >= dirs {
		t.Fatalf("the walk after reused %d of %d listings: want the unchanged ones only", n, dirs)
	}
	for _, dot := range []string{"deep/a/b/c/new/.git", "deep/p/q/sub/.git"} {
		if reused.Repos[filepath.Join(wd, dot)] == nil {
			t.Errorf("the walk reusing listings missed the repository %s; found %v", dot, sortedKeys(reused.Repos))
		}
	}
	if !slices.Equal(sortedKeys(reused.Repos), sortedKeys(full.Repos)) || !slices.Equal(sortedKeys(reused.Files), sortedKeys(full.Files)) {
		t.Errorf("reusing listings: repos %v files %v; reading all: repos %v files %v",
			sortedKeys(reused.Repos), sortedKeys(reused.Files), sortedKeys(full.Repos), sortedKeys(full.Files))
	}
	a, b := Diff(before, reused), Diff(before, full)
	if len(a) != len(b) || len(a) < 3 {
		t.Fatalf("findings reusing listings %v; reading all %v", a, b)
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].Kind != b[i].Kind || a[i].Key != b[i].Key {
			t.Errorf("finding %d: %+v reusing listings, %+v reading all", i, a[i], b[i])
		}
	}
}
