package incus

import (
	"context"
	"fmt"
)

// SetDevice adds or replaces (d non-nil) or removes (d nil) one of an instance's own
// devices, with a read-modify-write guarded by the ETag: a concurrent change makes it
// fail rather than be overwritten.
func (c *Client) SetDevice(ctx context.Context, name, dev string, d map[string]string) error {
	inst, etag, err := c.Instance(ctx, name)
	if err != nil {
		return err
	}
	devs := inst.Devices
	if devs == nil {
		devs = map[string]map[string]string{}
	}
	if d == nil {
		delete(devs, dev)
	} else {
		devs[dev] = d
	}
	put := InstancePut{Architecture: inst.Architecture, Config: inst.Config, Devices: devs,
		Ephemeral: inst.Ephemeral, Profiles: inst.Profiles, Stateful: inst.Stateful, Description: inst.Description}
	if err := c.Update(ctx, name, put, etag); err != nil {
		return fmt.Errorf("device %s: %w", dev, err)
	}
	return nil
}
