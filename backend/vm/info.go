package vm

import (
	"strconv"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
)

// Info is box info for a vm box: the instance, its state when running, its snapshots.
func (b Backend) Info(name string) (backend.Info, error) {
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return backend.Info{}, err
	}
	defer done()
	var st *incus.InstanceState
	if inst.Running() {
		if st, err = c.State(ctx, inst.Name); err != nil {
			return backend.Info{}, b.err(err)
		}
	}
	snaps, err := c.Snapshots(ctx, inst.Name)
	if err != nil {
		return backend.Info{}, b.err(err)
	}
	return newInfo(*inst, st, snaps), nil
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
