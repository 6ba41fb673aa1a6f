// Package vm is the vm backend: box's logic above the Incus client. Its launch
// sequence goes from an instance request (a mint or a clone, planned by the caller) to a
// box that is running, has its own machine ID, an IPv4 lease and a finished cloud-init,
// or to nothing left behind. Only what is kept on
// purpose (a box whose lease or cloud-init did not come) survives a failure, and the
// error says so by its type.
package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/progress"
)

// Launch is one launch, decided by the caller.
type Launch struct {
	Name string
	Req  incus.InstancesPost
	// Clone: the request copies a box; a clone starts without its source's doors and
	// takes no pristine snapshot of its own.
	Clone bool
	// Pool is a mint's storage pool (its driver decides the pristine snapshot).
	Pool string
	// Pristine is $BOX_SNAPSHOT_PRISTINE, checked by PristinePolicy before the launch.
	Pristine string
	// Timeout is the launch's time-box, for the errors' wording (ctx carries it).
	Timeout time.Duration
}

// Reporter is how a launch tells the operator what it does.
type Reporter struct {
	Progress *progress.Line
	Warn     func(format string, a ...any) // a "box: warning:" line
	Note     func(format string, a ...any) // a closing "box:" line (not with --quiet)
}

// Result is the launched box.
type Result struct {
	Inst incus.Instance
	IPv4 string
}

// Error is a launch step that failed; the half-made box was removed.
type Error struct {
	Box  string
	What string // the step: "create", "start", ...
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("could not %s box %q (it was removed): %v", e.What, e.Box, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// LeaseError is a box that runs but got no IPv4 lease in time. It is kept: the box is
// fine, the host's network is what to look at.
type LeaseError struct {
	Box, Iface string
	Timeout    time.Duration
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("box %q is running but got no IPv4 lease on %s within %s", e.Box, e.Iface, e.Timeout)
}

// Run launches l within ctx (the launch's time-box). The caller has checked that no
// instance has the name.
func Run(ctx context.Context, c *incus.Client, l Launch, r Reporter) (*Result, error) {
	p := r.Progress
	fail := func(what string, err error) error {
		Discard(c, l.Name)
		return &Error{Box: l.Name, What: what, Err: err}
	}
	// From here on a failure must not leave a half-made box behind.
	if err := c.Create(ctx, l.Req); err != nil {
		return nil, fail("create", err)
	}
	// Every box gets its own machine ID before its first boot: systemd-networkd's DHCP
	// client identity derives from it, so two clones (or two mints of an image that
	// keeps a copy in /var/lib/dbus) would otherwise share a lease. A container's file
	// system is written while it is stopped; a VM's only through its agent, so a VM
	// clone is started, reset, and restarted once (a VM mint keeps what its image
	// gives: a restart per mint is not worth an image's mistake).
	vmClone := false
	if l.Clone || l.Req.Type != incus.TypeVM {
		inst, _, err := c.Instance(ctx, l.Name)
		if err != nil {
			return nil, fail("inspect", err)
		}
		// A door's host port is unique on the host: a clone starts without its source's.
		if err := CloseDoors(ctx, c, *inst); err != nil {
			return nil, fail("close the doors of", err)
		}
		if inst.Type == incus.TypeContainer && !SharedIDs(*inst) {
			if err := OwnRange(ctx, c, l.Name); err != nil {
				return nil, fail("give a host uid range of its own to", err)
			}
		}
		if vmClone = inst.Type == incus.TypeVM; !vmClone {
			p.Step("giving %s a fresh machine ID", l.Name)
			if err := c.ResetMachineID(ctx, l.Name); err != nil {
				return nil, fail("reset the machine ID of", err)
			}
		}
	}
	p.Step("starting %s", l.Name)
	if err := c.Start(ctx, l.Name); err != nil {
		return nil, fail("start", err)
	}
	if vmClone {
		p.Step("giving %s a fresh machine ID (through its agent, then a restart)", l.Name)
		if err := ResetVMMachineID(ctx, c, l.Name); err != nil {
			return nil, fail("reset the machine ID of", err)
		}
	}
	p.Step("waiting for %s's IPv4 lease", l.Name)
	ip, err := c.WaitIPv4(ctx, l.Name, Iface)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &LeaseError{Box: l.Name, Iface: Iface, Timeout: l.Timeout}
		}
		return nil, fail("wait for the lease of", err)
	}
	inst, _, err := c.Instance(ctx, l.Name)
	if err != nil {
		return nil, err // the box is up: kept
	}
	if inst.Config[incus.KeyUserData] != "" {
		p.Step("waiting for cloud-init in %s", l.Name)
		if err := Provision(ctx, c, l.Name, l.Timeout, r); err != nil {
			var pe *ProvisionError
			if errors.As(err, &pe) {
				return nil, err // kept, stopped, for inspection
			}
			return nil, fail("provision", err)
		}
	}
	if !l.Clone {
		takePristine(ctx, c, r, l.Name, l.Pool, l.Pristine)
	}
	return &Result{Inst: *inst, IPv4: ip}, nil
}
