package vm

import (
	"fmt"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// Restore is box restore for a vm box: asked, then rolled back to the box asked about.
func (b Backend) Restore(name, snap string, force bool) error {
	req, err := incus.RestoreRequest(snap)
	if err != nil {
		return errs.Usage("snapshot labels are up to 63 characters, without '/' or spaces", "%s", err)
	}
	if err := incus.ValidateName(name); err != nil {
		return b.err(err)
	}
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return err
	}
	defer done()
	if err := b.NeedSnapshot(ctx, c, name, snap); err != nil {
		return err
	}
	if err := b.Ask(force, fmt.Sprintf("roll box %s back to %s? everything since is lost", name, snap), "not restored"); err != nil {
		return err
	}
	if !force {
		// Roll back the box the question was about (and its snapshot), not
		// whatever has the name now.
		if _, err := b.ResolveAgain(ctx, c, inst); err != nil {
			return err
		}
		if err := b.NeedSnapshot(ctx, c, name, snap); err != nil {
			return err
		}
	}
	p := b.progress()
	p.Step("restoring %s to %s", name, snap)
	if inheritedSnapshot(*inst, snapOf(ctx, c, name, snap)) {
		// The snapshot came from the clone's source, and its identity with it.
		p.Step("restoring %s to %s (inherited from its source: keeping its own identity)", name, snap)
		err = restoreInherited(ctx, c, name, req)
	} else {
		err = c.Restore(ctx, name, req)
	}
	p.Done()
	if err != nil {
		return b.err(err)
	}
	b.note("%s restored to %s", name, snap)
	return nil
}
