package vm

import (
	"context"
	"fmt"

	"github.com/heavy-duty/box/backend/incus"
)

// ownRangeTries bounds the re-allocations OwnRange asks for: each is one more pick by
// incusd after the others' ranges were written, so a second one is already rare.
const ownRangeTries = 5

// SharedRangeError: container Box got a host uid range that another container (Other)
// holds too, and asking incusd again did not part them.
type SharedRangeError struct {
	Box, Other string
	Tries      int
}

func (e *SharedRangeError) Error() string {
	return fmt.Sprintf("box %q: incusd gave it host uids that container %q holds too, %d times: its root would be that container's root to the host kernel", e.Box, e.Other, e.Tries)
}

// OwnRange makes sure the stopped container name, isolated, got a host uid range no
// other isolated container has. incusd picks a free range under a lock but writes it
// (volatile.idmap.base) after the lock, so two containers made at the same moment can get
// the same one (seen: the vm drill's two boxes, made side by side, on one range). Each
// box checks after its own create, so of two racing mints the later one sees the other's
// range; a clash is undone by turning the key off and on, which has incusd pick again.
// The containers of every project are compared when the client may list them; else its
// own project's. Only containers on the same cluster member count: each member is its
// own host and allocates from its own range (a lab cluster on one machine overlaps by
// design; TestClusterLive was refused there).
func OwnRange(ctx context.Context, c *incus.Client, name string) error {
	for try := 0; ; try++ {
		other, err := rangeClash(ctx, c, name)
		if err != nil || other == "" {
			return err
		}
		if try == ownRangeTries {
			return &SharedRangeError{Box: name, Other: other, Tries: try + 1}
		}
		if err := c.SetConfig(ctx, name, map[string]string{incus.KeyIsolatedIDs: "false"}); err != nil {
			return err
		}
		if err := c.SetConfig(ctx, name, map[string]string{incus.KeyIsolatedIDs: "true"}); err != nil {
			return err
		}
	}
}

// rangeClash names another isolated container whose next or current map shares a host
// uid with name's next map ("" when none does). A map that does not read is an error.
func rangeClash(ctx context.Context, c *incus.Client, name string) (string, error) {
	me, _, err := c.Instance(ctx, name)
	if err != nil {
		return "", err
	}
	mine, err := incus.ParseIDMap(me.Config[incus.KeyIDMapNext])
	if err != nil {
		return "", fmt.Errorf("box %q: %s: %w", name, incus.KeyIDMapNext, err)
	}
	all, err := c.ListAllInstances(ctx)
	if err != nil {
		if all, err = c.ListInstances(ctx); err != nil {
			return "", err
		}
	}
	for _, o := range all {
		if o.Type != incus.TypeContainer || (o.Name == me.Name && o.Project == me.Project) {
			continue
		}
		if o.Location != me.Location {
			continue // another cluster member: another host kernel, its own uid space
		}
		if _, ok := incus.IsolatedBase(o); !ok {
			continue // the shared range: said aloud on its own (SharedIDsError)
		}
		for _, key := range []string{incus.KeyIDMapNext, incus.KeyIDMapCurrent} {
			if o.Config[key] == "" {
				continue
			}
			theirs, err := incus.ParseIDMap(o.Config[key])
			if err != nil {
				return "", fmt.Errorf("container %q: %s: %w", o.Name, key, err)
			}
			if _, _, ok := incus.UIDOverlap(mine, theirs); ok {
				if o.Project != "" && o.Project != me.Project {
					return o.Project + "/" + o.Name, nil
				}
				return o.Name, nil
			}
		}
	}
	return "", nil
}
