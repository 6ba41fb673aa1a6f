package vm

import "fmt"

// Delete is box rm for a vm box: asked, then the box asked about is stopped and deleted.
func (b Backend) Delete(name string, force bool) error {
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return err
	}
	defer done()
	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		return b.err(err)
	}
	what := fmt.Sprintf("delete box %s", name)
	if len(snaps) > 0 {
		what += fmt.Sprintf(" and its %d snapshot(s)", len(snaps))
	}
	if inst.Running() {
		what += " (it is running)"
	}
	if err := b.Ask(force, what+"?", "not deleted"); err != nil {
		return err
	}
	if !force {
		// Delete the box the question was about, not whatever has its name now.
		if inst, err = b.ResolveAgain(ctx, c, inst); err != nil {
			return err
		}
	}
	if inst.Running() {
		if err := c.Stop(ctx, name, 0, true); err != nil {
			return b.err(err)
		}
	}
	if err := c.Delete(ctx, name); err != nil {
		return b.err(err)
	}
	fmt.Fprintf(b.Stderr, "box: %s deleted\n", name)
	return nil
}
