package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRmCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "rm BOX",
		Short:   "delete a box and its snapshots (asks first)",
		GroupID: groupVM,
		Long: `Delete a box with all its snapshots; a running box is stopped first. Nothing of it
can be recovered, so box asks first on a terminal; --force skips the question. Without
a terminal and without --force it refuses. A bwrap box (its directory, home and
snapshots) is deleted only while nothing runs in it.`,
		Example: `  box rm scratch
  box rm scratch --force`,
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			be, err := backendFor(e, name)
			if err != nil {
				return err
			}
			return be.Delete(name, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not ask")
	return cmd
}

// Delete is box rm for a vm box: asked, then the box asked about is stopped and deleted.
func (v vmBackend) Delete(name string, force bool) error {
	e := v.e
	ctx, c, inst, done, err := v.open(name)
	if err != nil {
		return err
	}
	defer done()
	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		return vmErr(e, err)
	}
	what := fmt.Sprintf("delete box %s", name)
	if len(snaps) > 0 {
		what += fmt.Sprintf(" and its %d snapshot(s)", len(snaps))
	}
	if inst.Running() {
		what += " (it is running)"
	}
	if err := ask(e, force, what+"?", "not deleted"); err != nil {
		return err
	}
	if !force {
		// Delete the box the question was about, not whatever has its name now.
		if inst, err = resolveAgain(ctx, e, c, inst); err != nil {
			return err
		}
	}
	if inst.Running() {
		if err := c.Stop(ctx, name, 0, true); err != nil {
			return vmErr(e, err)
		}
	}
	if err := c.Delete(ctx, name); err != nil {
		return vmErr(e, err)
	}
	fmt.Fprintf(e.stderr, "box: %s deleted\n", name)
	return nil
}
