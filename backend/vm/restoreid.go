package vm

import (
	"context"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

// inheritedSnapshot reports whether snap came with the box from the source it was
// cloned from (a clone keeps its source's snapshots): it is older than the box itself.
// Such a snapshot holds the source's identity: its MAC addresses and UUID in the
// snapshot's config, its machine ID on the disk.
func inheritedSnapshot(inst incus.Instance, snap incus.Snapshot) bool {
	return inst.Config[incus.KeyOrigin] == incus.OriginClone && !snap.CreatedAt.IsZero() && snap.CreatedAt.Before(inst.CreatedAt)
}

// identityKeys are the keys of a box's config that tell it from its source: its UUID,
// its NICs' MAC addresses, and its provenance stamp (a clone, from where, when).
func identityKeys(cfg map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cfg {
		switch {
		case k == "volatile.uuid", k == incus.KeyOrigin, k == incus.KeyOriginFrom, k == incus.KeyCreated,
			strings.HasPrefix(k, "volatile.") && strings.HasSuffix(k, ".hwaddr"):
			out[k] = v
		}
	}
	return out
}

// restoreInherited rolls a clone back to a snapshot it inherited, keeping the clone's
// own identity: the box is stopped (a restore restarts a running box, and with the
// source's MAC address Incus refuses to start it next to the source), rolled back,
// given its UUID, MAC addresses and stamp back and a fresh machine ID, and left running or
// stopped as it was.
func restoreInherited(ctx context.Context, c *incus.Client, name string, req incus.RestorePut) error {
	inst, _, err := c.Instance(ctx, name)
	if err != nil {
		return err
	}
	own := identityKeys(inst.Config)
	running := inst.Running()
	if running {
		if err := c.Stop(ctx, name, 30*time.Second, false); err != nil {
			if err := c.Stop(ctx, name, 0, true); err != nil {
				return err
			}
		}
	}
	if err := c.Restore(ctx, name, req); err != nil {
		return err
	}
	if err := c.SetConfig(ctx, name, own); err != nil {
		return err
	}
	if inst.Type == incus.TypeVM {
		// A VM's disk is reachable through its agent only.
		if err := c.Start(ctx, name); err != nil {
			return err
		}
		if err := ResetVMMachineID(ctx, c, name); err != nil {
			return err
		}
		if !running {
			return c.Stop(ctx, name, 60*time.Second, false)
		}
		return nil
	}
	if err := c.ResetMachineID(ctx, name); err != nil {
		return err
	}
	if running {
		return c.Start(ctx, name)
	}
	return nil
}

// snapOf returns the snapshot snap of box name (zero when it cannot be read).
func snapOf(ctx context.Context, c *incus.Client, name, snap string) incus.Snapshot {
	snaps, _ := c.Snapshots(ctx, name)
	for _, s := range snaps {
		if s.Name == snap {
			return s
		}
	}
	return incus.Snapshot{}
}
