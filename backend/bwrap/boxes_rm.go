package bwrap

import (
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/internal/errs"
)

func (be Boxes) Rename(old, nu string) error {
	b, err := be.Lookup(old)
	if err != nil {
		return err
	}
	if err := dirbox.ValidName(nu); err != nil {
		return errs.Usage("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	if err := be.nameFree(nu); err != nil {
		return err
	}
	if _, err := be.Store.Rename(b, nu); err != nil {
		return err
	}
	fmt.Fprintf(be.Session.Stderr, "box: %s renamed to %s\n", old, nu)
	return nil
}

func (be Boxes) Delete(name string, force bool) error {
	b, err := be.Lookup(name)
	if err != nil {
		return err
	}
	if b.Busy() {
		return &dirbox.BusyError{Name: name}
	}
	snaps, err := b.Snapshots()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("delete bwrap box %s (its home, logins and tools)", name)
	if len(snaps) > 0 {
		what += fmt.Sprintf(" and its %d snapshot(s)", len(snaps))
	}
	if err := be.Confirm(force, what+"?", "not deleted"); err != nil {
		return err
	}
	if err := be.Store.Remove(b); err != nil {
		return err
	}
	fmt.Fprintf(be.Session.Stderr, "box: %s deleted\n", name)
	return nil
}
