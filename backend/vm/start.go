package vm

import "fmt"

// Start is box start for a vm box (a running box is left as it is).
func (b Backend) Start(name string) error {
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return err
	}
	defer done()
	b.warnSharedIDs(name, inst)
	if inst.Running() {
		fmt.Fprintf(b.Stderr, "box: %s is already running\n", name)
		return nil
	}
	return b.err(c.Start(ctx, name))
}
