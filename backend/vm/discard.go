package vm

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

// Discard deletes a half-made box, with its own deadline (the launch's may be over). A
// create cut short by the time-box goes on in incusd (it cannot be cancelled): wait for
// it to end, then delete what it made. An instance that is not a box is never touched.
func Discard(c *incus.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		inst, _, err := c.Instance(ctx, name)
		switch {
		case err == nil && !incus.IsBox(*inst):
			return // not ours: never touched
		case err == nil:
			_ = c.Stop(ctx, name, 0, true)
			if c.Delete(ctx, name) == nil {
				return
			}
		case !incus.IsNotFound(err) || !Busy(ctx, c, name):
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Busy reports whether incusd is still running an operation on the instance name.
func Busy(ctx context.Context, c *incus.Client, name string) bool {
	var ops map[string][]incus.Operation
	if err := c.Query(ctx, "GET", "/operations?recursion=1", nil, &ops); err != nil {
		return false
	}
	for _, op := range ops["running"] {
		for _, r := range op.Resources["instances"] {
			if strings.TrimPrefix(r, "/1.0/instances/") == name {
				return true
			}
		}
	}
	return false
}

// ResetVMMachineID empties a running VM's /etc/machine-id once its agent answers, and
// restarts it: systemd then generates a new ID at boot (from the VM's own UUID, which
// Incus gives every copy) before networkd asks for a lease.
func ResetVMMachineID(ctx context.Context, c *incus.Client, name string) error {
	for {
		err := c.ResetMachineID(ctx, name)
		if err == nil {
			break
		}
		if !errors.Is(err, incus.ErrAgentNotRunning) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := c.Stop(ctx, name, 60*time.Second, false); err != nil {
		return err
	}
	return c.Start(ctx, name)
}

// CloseDoors removes a box's doors (a clone's or an import's: which host port opens
// into a box is decided on this host, once, by box expose).
func CloseDoors(ctx context.Context, c *incus.Client, inst incus.Instance) error {
	exp, _ := Exposures(inst.Devices)
	for _, x := range exp {
		if err := c.SetDevice(ctx, inst.Name, x.Device, nil); err != nil {
			return err
		}
	}
	return nil
}
