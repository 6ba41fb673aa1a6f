package vm

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
)

// An exposure is a deliberate door from the host's loopback to a port inside a box:
// an Incus proxy device named expose-PORT, bound on the host side, listening on
// 127.0.0.1:HOSTPORT only, connecting to 127.0.0.1:PORT inside the box. Its connect
// side runs in the box's own network namespace, so nothing crosses the box bridge: the
// ACL, the firewall and port isolation stay as they are, and no other machine (nor
// another box) gains a path. There is no flag to widen the listen address.

// ExposePrefix names the proxy devices box expose adds.
const ExposePrefix = "expose-"

// Exposure is one door: the box's PORT, reachable at 127.0.0.1:HostPort on the host.
type Exposure struct {
	Device   string `json:"-"`
	Port     int    `json:"port"`
	HostPort int    `json:"host_port"`
}

// ParsePort reads a TCP port, 1 to 65535.
func ParsePort(what, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != s {
		return 0, usage("ports are numbers from 1 to 65535", "%s %q: not a port (1-65535)", what, s)
	}
	return n, nil
}

// ExposureDevice is the proxy device of an exposure. It is pure.
func ExposureDevice(port, hostPort int) (string, map[string]string) {
	return ExposePrefix + strconv.Itoa(port), map[string]string{
		"type":    "proxy",
		"bind":    "host",
		"listen":  fmt.Sprintf("tcp:127.0.0.1:%d", hostPort),
		"connect": fmt.Sprintf("tcp:127.0.0.1:%d", port),
	}
}

// ParseExposure reads a device as an exposure: only box's exact shape counts (the name,
// host-bound, loopback on both sides, TCP, nothing else set).
func ParseExposure(name string, d map[string]string) (Exposure, bool) {
	port, err := strconv.Atoi(strings.TrimPrefix(name, ExposePrefix))
	if !strings.HasPrefix(name, ExposePrefix) || err != nil || len(d) != 4 {
		return Exposure{}, false
	}
	hp, err := strconv.Atoi(strings.TrimPrefix(d["listen"], "tcp:127.0.0.1:"))
	if err != nil {
		return Exposure{}, false
	}
	wantName, want := ExposureDevice(port, hp)
	if wantName != name {
		return Exposure{}, false
	}
	for k, v := range want {
		if d[k] != v {
			return Exposure{}, false
		}
	}
	return Exposure{Device: name, Port: port, HostPort: hp}, true
}

// Exposures lists a box's exposures by port, and the names of its other proxy devices
// (a door box did not open: doctor fails on them).
func Exposures(devices map[string]map[string]string) (exp []Exposure, foreign []string) {
	for name, d := range devices {
		if d["type"] != "proxy" {
			continue
		}
		if e, ok := ParseExposure(name, d); ok {
			exp = append(exp, e)
		} else {
			foreign = append(foreign, name)
		}
	}
	sort.Slice(exp, func(i, j int) bool { return exp[i].Port < exp[j].Port })
	sort.Strings(foreign)
	return exp, foreign
}

// Exposures are the doors of the box name (box expose --list).
func (b Backend) Exposures(name string) ([]Exposure, error) {
	_, _, inst, done, err := b.open(name)
	if err != nil {
		return nil, err
	}
	defer done()
	exp, _ := Exposures(inst.Devices)
	return exp, nil
}

// Unexpose closes the door to port of the box name (box expose --remove).
func (b Backend) Unexpose(name string, port int) error {
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return err
	}
	defer done()
	exp, _ := Exposures(inst.Devices)
	for _, x := range exp {
		if x.Port == port {
			if err := c.SetDevice(ctx, name, x.Device, nil); err != nil {
				return b.err(err)
			}
			b.note("closed 127.0.0.1:%d -> %s:%d", x.HostPort, name, port)
			return nil
		}
	}
	return &DoorError{Box: name, Port: port}
}

// Expose opens a door from the host's loopback, hostPort, to port of the box name (a
// container, for now).
func (b Backend) Expose(name string, port, hostPort int) error {
	ctx, c, inst, done, err := b.open(name)
	if err != nil {
		return err
	}
	defer done()
	exp, _ := Exposures(inst.Devices)
	if inst.Type == incus.TypeVM {
		return errs.WithHint(fmt.Errorf("box %q is a virtual machine: box expose opens doors into containers only, for now", name),
			"Incus forwards to a VM only in NAT mode, through the bridge, which box's isolation stack does not admit yet")
	}
	for _, x := range exp {
		if x.Port == port {
			return &DoorError{name, port, x.HostPort}
		}
	}
	if err := hostPortFree(ctx, c, hostPort); err != nil {
		return err
	}
	dev, d := ExposureDevice(port, hostPort)
	if err := c.SetDevice(ctx, name, dev, d); err != nil {
		return b.err(fmt.Errorf("expose port %d of box %q: %w", port, name, err))
	}
	b.note("127.0.0.1:%d -> %s:%d (the server in the box may listen on its loopback); 'box expose %s --remove %d' closes it",
		hostPort, name, port, name, port)
	return nil
}

// PortTakenError: a host port is already in use, by another door or a listener.
type PortTakenError struct {
	Port int
	By   string
}

func (e *PortTakenError) Error() string {
	return fmt.Sprintf("host port %d is in use (%s)", e.Port, e.By)
}

// hostPortFree refuses a host port that a door of any box (running or not: a stopped
// box's door opens when it starts) or a listener on this host's loopback holds. A
// listener would be shadowed by the door, or fail it.
func hostPortFree(ctx context.Context, c *incus.Client, hostPort int) error {
	all, err := c.ListInstances(ctx)
	if err != nil {
		return err
	}
	for _, i := range all {
		for dn, d := range i.Devices {
			if d["type"] == "proxy" && listenPort(d["listen"]) == hostPort {
				return &PortTakenError{hostPort, fmt.Sprintf("device %s of instance %s", dn, i.Name)}
			}
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)))
	if err != nil {
		return &PortTakenError{hostPort, "something on this host listens on it"}
	}
	return l.Close()
}

// listenPort is the port of a proxy listen address (tcp:ADDR:PORT), 0 when unreadable.
func listenPort(listen string) int {
	rest, ok := strings.CutPrefix(listen, "tcp:")
	if !ok {
		return 0
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
