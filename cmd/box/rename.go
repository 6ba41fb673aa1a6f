package main

import (
	"fmt"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/spf13/cobra"
)

func newRenameCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "rename OLD NEW",
		Short:   "rename a stopped box",
		GroupID: groupVM,
		Long: `Rename a box. Incus renames stopped instances only: a running box is refused with
"stop it first". The box keeps its snapshots and its stamp. A bwrap box is renamed while
nothing runs in it.`,
		Example:           `  box stop work && box rename work old-work`,
		Args:              boxArgs(2, "the old and the new name"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, nu := args[0], args[1]
			be, err := backendFor(e, old)
			if err != nil {
				return err
			}
			return be.Rename(old, nu)
		},
	}
}

// Rename is box rename for a vm box: stopped boxes only, as Incus renames.
func (v vmBackend) Rename(old, nu string) error {
	e := v.e
	for _, n := range []string{old, nu} {
		if err := incus.ValidateName(n); err != nil {
			return vmErr(e, err)
		}
	}
	ctx, c, inst, done, err := v.open(old)
	if err != nil {
		return err
	}
	defer done()
	if inst.Running() {
		return withHint(fmt.Errorf("box %q is running: stop it first", old), "box stop "+old+" && box rename "+old+" "+nu)
	}
	if _, _, err := c.Instance(ctx, nu); err == nil {
		return withHint(fmt.Errorf("an instance named %q already exists", nu), "pick another name")
	} else if !incus.IsNotFound(err) {
		return vmErr(e, err)
	}
	if err := c.Rename(ctx, old, nu); err != nil {
		return vmErr(e, err)
	}
	fmt.Fprintf(e.stderr, "box: %s renamed to %s\n", old, nu)
	return nil
}
