package bwrap

import (
	"fmt"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/internal/errs"
)

func (be Boxes) Snapshot(name, label string) (string, error) {
	b, err := be.Lookup(name)
	if err != nil {
		return "", err
	}
	if err := dirbox.ValidLabel(label); err != nil {
		return "", errs.Usage("labels are up to 63 characters, without '/', spaces or a leading dot", "%s", err)
	}
	p := be.progress()
	p.Step("taking snapshot %s/%s", name, label)
	cs, err := b.TakeSnapshot(label, time.Now())
	p.Done()
	if err != nil {
		return "", err
	}
	be.warnLeftOut("snapshot "+name+"/"+label, cs)
	be.note("snapshot %s/%s taken (%s, %s)", name, label, copyCost(cs), p.Elapsed().Round(time.Millisecond))
	return label, nil
}

func (be Boxes) Restore(name, snap string, force bool) error {
	b, err := be.Lookup(name)
	if err != nil {
		return err
	}
	snaps, err := b.Snapshots()
	if err != nil {
		return err
	}
	found := false
	var have []string
	for _, s := range snaps {
		found = found || s.Name == snap
		have = append(have, s.Name)
	}
	if !found {
		return &dirbox.NoSnapshotError{Box: name, Name: snap, Have: have}
	}
	if b.Busy() {
		return &dirbox.BusyError{Name: name}
	}
	if err := be.Confirm(force, fmt.Sprintf("roll box %s back to %s? everything in its home since is lost", name, snap), "not restored"); err != nil {
		return err
	}
	p := be.progress()
	p.Step("restoring %s to %s", name, snap)
	cs, err := b.Restore(snap)
	p.Done()
	if err != nil {
		return err
	}
	be.warnLeftOut("restore of "+name+" to "+snap, cs)
	be.note("%s restored to %s (%s)", name, snap, copyCost(cs))
	return nil
}
