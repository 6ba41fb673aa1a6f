package main

import (
	"fmt"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/spf13/cobra"
)

func newRestoreCmd(e *env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "restore BOX SNAPSHOT",
		Short:   "roll a box back to a snapshot (asks first)",
		GroupID: groupVM,
		Long: `Roll a box back to one of its snapshots. Everything done in the box since is lost,
so box asks first on a terminal; --force skips the question. Without a terminal and
without --force it refuses. A bwrap box's home and agent state are replaced by the
snapshot's copy, atomically, while nothing runs in it.`,
		Example: `  box restore work authed
  box restore work authed --force`,
		Args:              boxArgs(2, "a box and a snapshot"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, snap := args[0], args[1]
			be, err := backendFor(e, name)
			if err != nil {
				return err
			}
			return be.Restore(name, snap, force)
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "do not ask")
	return cmd
}

// Restore is box restore for a vm box: asked, then rolled back to the box asked about.
func (v vmBackend) Restore(name, snap string, force bool) error {
	e := v.e
	req, err := incus.RestoreRequest(snap)
	if err != nil {
		return usagef("snapshot labels are up to 63 characters, without '/' or spaces", "%s", err)
	}
	if err := incus.ValidateName(name); err != nil {
		return vmErr(e, err)
	}
	ctx, c, inst, done, err := v.open(name)
	if err != nil {
		return err
	}
	defer done()
	if err := needSnapshot(ctx, e, c, name, snap); err != nil {
		return err
	}
	if err := ask(e, force, fmt.Sprintf("roll box %s back to %s? everything since is lost", name, snap), "not restored"); err != nil {
		return err
	}
	if !force {
		// Roll back the box the question was about (and its snapshot), not
		// whatever has the name now.
		if _, err := resolveAgain(ctx, e, c, inst); err != nil {
			return err
		}
		if err := needSnapshot(ctx, e, c, name, snap); err != nil {
			return err
		}
	}
	p := newProgress(e)
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
		return vmErr(e, err)
	}
	note(e, "%s restored to %s", name, snap)
	return nil
}
