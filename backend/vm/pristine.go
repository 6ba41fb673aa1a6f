package vm

// The 'pristine' snapshot a fresh mint takes, as upstream does: the box right after
// cloud-init, before anyone touched it, so 'box restore BOX pristine' undoes everything
// done since without a new mint. A clone takes none: it has no pristine moment of its
// own (it keeps its source's snapshots, 'pristine' among them).

import (
	"context"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

const (
	PristineLabel = "pristine"
	// EnvSnapshotPristine chooses: unset, take it except on a dir pool; 1, take it on
	// any pool; 0, never.
	EnvSnapshotPristine = "BOX_SNAPSHOT_PRISTINE"
)

// PristinePolicy decides whether a mint on a pool of driver takes the snapshot, and
// if not, why. A dir pool has no copy-on-write: the snapshot would be a full copy of the
// disk on every mint, so it is skipped there unless asked for by name (upstream skips it
// there always). driver "" (unreadable) takes it: a snapshot not taken is the moment
// gone for good.
func PristinePolicy(setting, driver string) (take bool, why string, err error) {
	switch setting {
	case "0":
		return false, EnvSnapshotPristine + "=0", nil
	case "1":
		return true, "", nil
	case "":
		if driver == "dir" {
			return false, "the storage pool is a dir pool, where a snapshot is a full copy of the disk (" + EnvSnapshotPristine + "=1 takes it anyway)", nil
		}
		return true, "", nil
	}
	return false, "", errs.Usage(EnvSnapshotPristine+"=1 takes it on any pool, =0 never, unset skips it on a dir pool", "%s=%q: want 0 or 1", EnvSnapshotPristine, setting)
}

// takePristine takes the snapshot, or says why not. It is never fatal: the box is the
// mint's product, the snapshot an undo.
func takePristine(ctx context.Context, c *incus.Client, r Reporter, name, pool, setting string) {
	driver, _ := c.PoolDriver(ctx, pool)
	take, why, _ := PristinePolicy(setting, driver) // checked before the launch
	if !take {
		r.Progress.Done()
		r.Note("no %q snapshot of %s: %s; 'box snapshot %s %s' takes one", PristineLabel, name, why, name, PristineLabel)
		return
	}
	r.Progress.Step("taking the %s snapshot of %s", PristineLabel, name)
	if err := c.CreateSnapshot(ctx, name, incus.SnapshotPost{Name: PristineLabel}); err != nil {
		r.Progress.Done()
		r.Warn("could not take the %q snapshot of %s (the box is fine, it just has no such mark): %v", PristineLabel, name, err)
	}
}
