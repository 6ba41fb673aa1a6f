package vm

import (
	"strconv"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
)

// Info is box info for a vm box: the instance, its state when running, its snapshots,
// all in one request (InstanceFull).
func (b Backend) Info(name string) (backend.Info, error) {
	ctx, stop := b.Context()
	defer stop()
	c := b.Client()
	defer c.Close()
	full, err := ResolveFull(ctx, c, name)
	if err != nil {
		return backend.Info{}, b.err(err)
	}
	st, snaps := full.State, full.Snapshots
	if st == nil {
		// A full answer always carries the state: without it the server did not
		// render the box in full (no instance_get_full), so its snapshots are
		// missing too. Ask for both.
		if full.Running() {
			if st, err = c.State(ctx, full.Name); err != nil {
				return backend.Info{}, b.err(err)
			}
		}
		if snaps, err = c.Snapshots(ctx, full.Name); err != nil {
			return backend.Info{}, b.err(err)
		}
	}
	if !full.Running() {
		st = nil // a stopped box shows what its instance says, as it always did
	}
	return newInfo(full.Instance, st, snaps), nil
}

// newInfo is box info of a vm box: the instance, its state (nil when stopped), its
// snapshots.
func newInfo(inst incus.Instance, st *incus.InstanceState, snaps []incus.Snapshot) backend.Info {
	out := backend.Info{
		Summary:   Summarize(inst, st).Backend(),
		CPU:       inst.Config[incus.KeyCPU],
		Memory:    inst.Config[incus.KeyMemory],
		Disk:      inst.Devices["root"]["size"],
		Snapshots: []backend.SnapshotInfo{},
		Exposed:   []backend.Exposure{},
	}
	exp, _ := Exposures(inst.Devices)
	for _, x := range exp {
		out.Exposed = append(out.Exposed, backend.Exposure(x))
	}
	out.Imported, out.ImportedLast = inst.Config[KeyImported], inst.Config[KeyImportedLast]
	out.ImportedCount, _ = strconv.Atoi(inst.Config[KeyImportedCount])
	for _, s := range snaps {
		out.Snapshots = append(out.Snapshots, backend.SnapshotInfo{Name: s.Name, Created: s.CreatedAt.UTC().Format(time.RFC3339)})
	}
	return out
}
