package vm

import (
	"fmt"
	"time"
)

// Stop is box stop for a vm box: a clean shutdown within timeout, or at once.
func (b Backend) Stop(name string, timeout time.Duration, force bool) error {
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return err
	}
	defer done()
	if !inst.Running() {
		fmt.Fprintf(b.Stderr, "box: %s is not running\n", name)
		return nil
	}
	if err := c.Stop(ctx, name, timeout, force); err != nil {
		if !force {
			return &StopError{name, b.err(err)}
		}
		return b.err(err)
	}
	return nil
}
