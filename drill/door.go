package drill

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
)

// The door rows of the vm drill: box expose's door (a proxy device from the host's
// loopback into a box) is opened on a box that listens on every address, then dialled
// the way the host's user would (127.0.0.1: must connect) and the way a machine on the
// LAN or the internet would (each of the host's other addresses: must not), and closed.

// DoorOptions tune the door probes.
type DoorOptions struct {
	Client *incus.Client
	Box    string // a box with a TCP listener on Port, on every address
	Port   int
	// Listen is the door's host-side address. Empty means box expose's own (127.0.0.1);
	// a test sets 0.0.0.0 to see the rows turn BREACH.
	Listen string
	// Dial dials from the host (nil: this process's network namespace).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// HostAddrs are the host's addresses (nil: host.LocalAddrs()); the non-loopback ones
	// are probed.
	HostAddrs []netip.Addr
}

// DoorProbes opens the door, probes it and closes it. It returns the rows door:loopback
// and door:host-addresses.
func DoorProbes(ctx context.Context, o DoorOptions) []Result {
	loop, wide := doorRows()
	fail := DoorError
	dial := o.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	addrs := o.HostAddrs
	if addrs == nil {
		addrs = host.LocalAddrs()
	}
	// A free host port: one nothing listens on now.
	hp, err := freePort(ctx, dial)
	if err != nil {
		return fail(err)
	}
	name, dev := vm.ExposureDevice(o.Port, hp)
	if inst, _, err := o.Client.Instance(ctx, o.Box); err != nil {
		return fail(err)
	} else if _, ok := inst.Devices[name]; ok {
		return fail(fmt.Errorf("box %s already has a door to port %d: not touched", o.Box, o.Port))
	}
	if o.Listen != "" {
		dev["listen"] = "tcp:" + net.JoinHostPort(o.Listen, strconv.Itoa(hp))
	}
	if err := o.Client.SetDevice(ctx, o.Box, name, dev); err != nil {
		return fail(fmt.Errorf("open the door: %w", err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = o.Client.SetDevice(cctx, o.Box, name, nil)
	}()
	tryDial := func(addr string) error {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		c, err := dial(dctx, "tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}

	lp := net.JoinHostPort("127.0.0.1", strconv.Itoa(hp))
	loop.Targets = []string{lp}
	// The forwarder starts with the device: wait for it (a bound, not an assertion).
	var lerr error
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if lerr = tryDial(lp); lerr == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	if lerr != nil {
		loop.Status, loop.Observed = Fail, errName(lerr)
	} else {
		loop.Status, loop.Observed = Pass, "connected"
	}

	var reached, blocked []string
	for _, a := range addrs {
		if a = a.Unmap(); a.IsLoopback() || a.IsLinkLocalUnicast() || !a.IsValid() {
			continue
		}
		t := net.JoinHostPort(a.String(), strconv.Itoa(hp))
		wide.Targets = append(wide.Targets, t)
		if err := tryDial(t); err == nil {
			reached = append(reached, t)
		} else {
			blocked = append(blocked, t+" "+errName(err))
		}
	}
	switch {
	case len(wide.Targets) == 0:
		wide.Status, wide.Observed = Error, "error: the host has no address beyond loopback to probe"
	case len(reached) > 0:
		wide.Status, wide.Observed = Breach, "connected: "+strings.Join(reached, ", ")
	default:
		wide.Status, wide.Observed = Pass, strings.Join(blocked, "; ")
	}
	return []Result{loop, wide}
}

func doorRows() (loop, wide Result) {
	loop = Result{ID: "door:loopback", Group: "door", Probe: "host's loopback → a box's door (box expose)",
		Targets: []string{}, Expected: "reachable"}
	wide = Result{ID: "door:host-addresses", Group: "door", Probe: "the host's other addresses → the door's port (as the LAN would)",
		Targets: []string{}, Expected: "unreachable"}
	return loop, wide
}

// DoorError is the door rows when they cannot run.
func DoorError(err error) []Result {
	loop, wide := doorRows()
	loop.Status, loop.Observed = Error, "error: "+err.Error()
	wide.Status, wide.Observed = Error, "error: "+err.Error()
	return []Result{loop, wide}
}

// freePort finds a TCP port on 127.0.0.1 where nothing listens (a refused dial).
func freePort(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (int, error) {
	for p := 39100; p < 39200; p++ {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := dial(dctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		cancel()
		if err != nil {
			return p, nil
		}
		c.Close()
	}
	return 0, fmt.Errorf("no free port in 39100-39199 on the host's loopback")
}
