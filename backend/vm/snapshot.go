package vm

import (
	"errors"
	"fmt"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// Snapshot is box snapshot for a vm box: an Incus snapshot, its label on stdout.
func (b Backend) Snapshot(name, label string) (string, error) {
	req, err := incus.SnapshotRequest(label)
	if err != nil {
		return "", errs.Usage("labels are up to 63 characters, without '/' or spaces", "%s", err)
	}
	ctx, c, _, done, err := b.open(name)
	if err != nil {
		return "", err
	}
	defer done()
	exists := &backend.SnapshotExistsError{Box: name, Name: label}
	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		return "", b.err(err)
	}
	for _, s := range snaps {
		if s.Name == label {
			return "", exists
		}
	}
	p := b.progress()
	p.Step("taking snapshot %s/%s", name, label)
	err = c.CreateSnapshot(ctx, name, req)
	p.Done()
	if err != nil {
		if errors.Is(err, incus.ErrExists) {
			return "", exists // taken meanwhile
		}
		return "", b.err(err)
	}
	fmt.Fprintln(b.Stdout, label)
	b.note("snapshot %s/%s taken", name, label)
	return label, nil
}
