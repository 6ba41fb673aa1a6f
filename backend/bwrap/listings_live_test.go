package bwrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"github.com/heavy-duty/box/internal/testenv"
)

// A run keeps its walk's directory listings for the next run in the same directory
// (ListingsPath, in box's data directory), which lists again only the directories
// changed since. A repository cloned between the runs into a directory whose listing
// was kept, with that directory's times set back as they were, is still found by the
// next run: its git directory is read-only inside, and a hook the sandbox tries to plant
// there never runs on the host. With the stamp check off (a test build) the next run
// takes the old listing, leaves the clone's git directory writable and never looks at
// it after, and the host's git commit runs the hook: the test can fail.
func TestSandboxStoredListingsNeverHide(t *testing.T) {
	testenv.RequireTool(t, "git")
	for _, off := range []bool{false, true} {
		name := "as-shipped"
		if off {
			name = "stamps-off"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			if off {
				w.withProtectionOff(t, bwrap.ProtListingStamps)
			}
			vendor := filepath.Join(w.proj, "vendor")
			w.write(filepath.Join(vendor, "README"), "vendored\n")
			if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
				t.Fatal(err, out)
			}
			waitDirsOlder(t, w.proj)
			if r := w.sh("true"); r.code != 0 {
				t.Fatalf("run 1: exit %d\n%s", r.code, r.stderr)
			}
			stored := dirlist.Load(bwrap.ListingsPath(filepath.Join(w.home, ".local", "share"), w.proj))
			if _, ok := stored.Reuse(vendor, nil); !ok {
				t.Fatalf("run 1 kept no listing of %s (%d kept)", vendor, stored.Len())
			}

			// Between the runs, the operator clones a repository into vendor; its times
			// are set back (a cache keyed on modification times would be fooled).
			fi, err := os.Stat(vendor)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := w.hostGit(vendor, "init", "-q", "lib"); err != nil {
				t.Fatal(err, out)
			}
			lib := filepath.Join(vendor, "lib")
			for _, args := range [][]string{{"commit", "-q", "--allow-empty", "-m", "one"}} {
				if out, err := w.hostGit(lib, args...); err != nil {
					t.Fatal(args, err, out)
				}
			}
			os.Chtimes(vendor, fi.ModTime(), fi.ModTime())

			r := w.sh(`p=vendor/lib/.git/hooks/pre-commit
printf '#!/bin/sh\ntouch %s/pwn\n' "$PWD" > $p && chmod +x $p && echo PLANTED`)
			t.Logf("run 2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			if !off && strings.Contains(r.stdout, "PLANTED") {
				t.Errorf("the sandbox wrote the hook of a repository cloned between the runs: its git directory was not protected")
			}
			w.hostGit(lib, "commit", "-q", "--allow-empty", "-m", "two")
			_, err = os.Lstat(filepath.Join(w.proj, "pwn"))
			switch ran := err == nil; {
			case ran && !off:
				t.Errorf("the host's git commit ran a hook the sandbox planted")
			case !ran && off:
				t.Errorf("with the stamp check off the planted hook did not run: the test proves nothing\n%s", r.stderr)
			}
		})
	}
}

// waitDirsOlder waits until the tree under root is old enough for a walk to keep its listings.
func waitDirsOlder(t *testing.T, root string) {
	t.Helper()
	if err := dirlist.WaitOlder(root, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}
