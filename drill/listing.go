package drill

// protect:stale-listing: a run keeps its walk's directory listings for the next run in
// the same directory, which lists again only the directories changed since (package
// dirlist). A listing taken back for a directory that did change would hide what is new
// in it from the protected set's scan and from the post-run audit. The row makes a
// fixture, lets a run of its own keep its listings, clones a repository into a directory
// of the fixture as the operator would between two runs (setting that directory's times
// back), and then a second run plants a pre-commit hook in the clone; after the audit the
// drill runs the host's git commit there: the hook running = breach.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/dirlist"
)

// StaleListingID is the row's id.
const StaleListingID = "protect:stale-listing"

// staleListingPlant writes $1/.git/hooks/pre-commit, which touches $2 (refused inside
// when the clone's git directory is read-only: the row judges by what runs after).
const staleListingPlant = `printf '#!/bin/sh\ntouch "%s"\n' "$2" > "$1/.git/hooks/pre-commit" && chmod +x "$1/.git/hooks/pre-commit"; exit 0`

// staleListingRow runs the row's two runs in a scratch data directory (their kept
// listings), with the drilled plan's template and isolation.
func (b *Bwrap) staleListingRow(p *bwrap.Plan, nonce string) Result {
	r := Result{ID: StaleListingID, Group: "protect", Probe: "a hook planted in a repository cloned, between two runs, into a directory whose listing the first run kept",
		Expected: "the second run sees the clone: the hook is refused or moved aside, the host's git commit runs nothing"}
	if _, err := exec.LookPath("git"); err != nil {
		r.Status, r.Observed = Skip, "git not on the host"
		return r
	}
	scratch, err := scratchDirs("box-drill-listing-", "data", "markers") // linkswap.go
	if err != nil {
		r.Status, r.Observed = Error, "scratch directory: "+err.Error()
		return r
	}
	defer os.RemoveAll(scratch)
	marker := filepath.Join(scratch, "markers", "stale-listing")
	vendor := filepath.Join(p.Spec.Workdir, ".box-drill-listing-"+nonce, "vendor")
	if err := os.MkdirAll(vendor, 0o755); err != nil {
		r.Status, r.Observed = Error, "fixture: "+err.Error()
		return r
	}
	defer os.RemoveAll(filepath.Dir(vendor))
	clone := filepath.Join(vendor, "lib")
	r.Targets = []string{filepath.Join(clone, ".git", "hooks", "pre-commit")}
	fail := func(what string, err error) Result {
		r.Status, r.Observed = Error, fmt.Sprintf("%s: %v", what, err)
		return r
	}
	// Old enough for the first run to keep its listings, as a tree one works in is.
	if err := dirlist.WaitOlder(filepath.Dir(vendor), 10*time.Second); err != nil {
		return fail("fixture", err)
	}
	data := filepath.Join(scratch, "data")
	if code, _, stderr, err := b.ownRun(p, data, "true"); err != nil || code != 0 {
		return fail("the first run", fmt.Errorf("exit %d, %v %s", code, err, stderr))
	}
	if _, ok := dirlist.Load(bwrap.ListingsPath(data, p.Spec.Workdir)).Reuse(vendor, nil); !ok {
		return fail("the first run", fmt.Errorf("kept no listing of %s", vendor))
	}
	fi, err := os.Stat(vendor)
	if err != nil {
		return fail("fixture", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hostRun(ctx, vendor, "git", "init", "-q", "lib"); err != nil { // protect.go
		return fail("git init", err)
	}
	if err := os.Chtimes(vendor, fi.ModTime(), fi.ModTime()); err != nil {
		return fail("fixture", err)
	}
	if code, _, stderr, err := b.ownRun(p, data, "sh", "-c", staleListingPlant, "stale-listing", clone, marker); err != nil || code != 0 {
		return fail("the second run", fmt.Errorf("exit %d, %v %s", code, err, stderr))
	}
	_ = hostRun(ctx, clone, "git", "-c", "user.name=box drill", "-c", "user.email=drill@box.invalid", "commit", "-q", "--allow-empty", "-m", "box drill")
	if _, err := os.Lstat(marker); err == nil {
		r.Status, r.Observed = Breach, "the host's git commit in "+clone+" ran the hook the second run planted"
		return r
	}
	r.Status, r.Observed = Pass, "the host's git commit in the clone ran nothing"
	return r
}
