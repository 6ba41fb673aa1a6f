package main

// The 'pristine' snapshot a fresh mint takes, as upstream does: the box right after
// cloud-init, before anyone touched it, so 'box restore BOX pristine' undoes everything
// done since without a new mint. A clone takes none: it has no pristine moment of its
// own (it keeps its source's snapshots, 'pristine' among them).

import (
	"context"
	"fmt"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/progress"
)

const (
	pristineLabel = "pristine"
	// envSnapshotPristine chooses: unset, take it except on a dir pool; 1, take it on
	// any pool; 0, never.
	envSnapshotPristine = "BOX_SNAPSHOT_PRISTINE"
)

// pristinePolicy decides whether a mint on a pool of driver takes the snapshot, and
// if not, why. A dir pool has no copy-on-write: the snapshot would be a full copy of the
// disk on every mint, so it is skipped there unless asked for by name (upstream skips it
// there always). driver "" (unreadable) takes it: a snapshot not taken is the moment
// gone for good.
func pristinePolicy(setting, driver string) (take bool, why string, err error) {
	switch setting {
	case "0":
		return false, envSnapshotPristine + "=0", nil
	case "1":
		return true, "", nil
	case "":
		if driver == "dir" {
			return false, "the storage pool is a dir pool, where a snapshot is a full copy of the disk (" + envSnapshotPristine + "=1 takes it anyway)", nil
		}
		return true, "", nil
	}
	return false, "", usagef(envSnapshotPristine+"=1 takes it on any pool, =0 never, unset skips it on a dir pool", "%s=%q: want 0 or 1", envSnapshotPristine, setting)
}

// takePristine takes the snapshot, or says why not. It is never fatal: the box is the
// mint's product, the snapshot an undo.
func takePristine(ctx context.Context, e *env, c *incus.Client, p *progress.Line, name, pool string) {
	driver, _ := c.PoolDriver(ctx, pool)
	take, why, _ := pristinePolicy(e.getenv(envSnapshotPristine), driver) // checked in planNew
	if !take {
		p.Done()
		note(e, "no %q snapshot of %s: %s; 'box snapshot %s %s' takes one", pristineLabel, name, why, name, pristineLabel)
		return
	}
	p.Step("taking the %s snapshot of %s", pristineLabel, name)
	if err := c.CreateSnapshot(ctx, name, incus.SnapshotPost{Name: pristineLabel}); err != nil {
		p.Done()
		fmt.Fprintf(e.stderr, "box: warning: could not take the %q snapshot of %s (the box is fine, it just has no such mark): %v\n", pristineLabel, name, err)
	}
}
