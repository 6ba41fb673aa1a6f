package vm

import (
	"fmt"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// Rename is box rename for a vm box: a stopped box, to a name incusd does not have.
func (b Backend) Rename(old, nu string) error {
	for _, n := range []string{old, nu} {
		if err := incus.ValidateName(n); err != nil {
			return b.err(err)
		}
	}
	ctx, c, inst, done, err := b.open(old)
	if err != nil {
		return err
	}
	defer done()
	if inst.Running() {
		return &backend.RunningError{Name: old, Verb: "rename", Why: "stop it first", Args: []string{nu}}
	}
	if _, _, err := c.Instance(ctx, nu); err == nil {
		return errs.WithHint(fmt.Errorf("an instance named %q already exists", nu), "pick another name")
	} else if !incus.IsNotFound(err) {
		return b.err(err)
	}
	if err := c.Rename(ctx, old, nu); err != nil {
		return b.err(err)
	}
	fmt.Fprintf(b.Stderr, "box: %s renamed to %s\n", old, nu)
	return nil
}
