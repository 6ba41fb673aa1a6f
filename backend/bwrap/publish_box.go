package bwrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/policy"
)

// A persistent bwrap box's exposures (box expose): kept in the box's directory, beside
// its stamp and outside state/ (so a snapshot neither carries nor restores them, and a
// clone does not inherit host ports this box holds); they go with the box. A bwrap box
// runs only while a session of it does (box shell, box exec; one at a time), so an
// exposure is forwarded while a session runs, by every session; a host port another
// program holds is said, and the session goes on without it.

// ExposedFile is the exposures' file in a box's directory.
const ExposedFile = "exposed.json"

type exposure struct {
	Port     uint16 `json:"port"`      // in the box
	HostPort uint16 `json:"host_port"` // on the host's loopback
}

type exposedJSON struct {
	Magic   string     `json:"box"`
	Exposed []exposure `json:"exposed"`
}

const exposedMagic = "box/bwrap-exposed/1"

// readExposed reads b's exposures (none when the file is absent). A file box cannot read
// or recognise is an error: never a box without its ports said.
func readExposed(b *dirbox.Box) ([]policy.PortMap, error) {
	data, err := os.ReadFile(filepath.Join(b.Dir, ExposedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("box %s: its exposures: %w", b.Name, err)
	}
	var x exposedJSON
	if err := json.Unmarshal(data, &x); err != nil || x.Magic != exposedMagic {
		return nil, fmt.Errorf("box %s: %s is not box's (%v): remove it to drop the box's exposures", b.Name, filepath.Join(b.Dir, ExposedFile), err)
	}
	var out []policy.PortMap
	for _, e := range x.Exposed {
		if e.Port == 0 || e.HostPort == 0 {
			return nil, fmt.Errorf("box %s: %s names port 0", b.Name, ExposedFile)
		}
		out = append(out, policy.PortMap{Host: e.HostPort, Sandbox: e.Port})
	}
	return out, nil
}

func writeExposed(b *dirbox.Box, ms []policy.PortMap) error {
	x := exposedJSON{Magic: exposedMagic, Exposed: []exposure{}}
	for _, m := range ms {
		x.Exposed = append(x.Exposed, exposure{Port: m.Sandbox, HostPort: m.Host})
	}
	data, err := json.MarshalIndent(x, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(b.Dir, ExposedFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("box %s: %w", b.Name, err)
	}
	return os.Rename(tmp, filepath.Join(b.Dir, ExposedFile))
}

// ExposeError: box expose on a bwrap box cannot do what it is asked (a port already
// exposed, a host port another exposure of the box uses, one not exposed: Unexposed).
type ExposeError struct {
	Box, Why  string
	Unexposed bool
}

func (e *ExposeError) Error() string { return fmt.Sprintf("box %s: %s", e.Box, e.Why) }

// Expose publishes the box's port on the host's loopback port hostPort at every
// session of the box from the next one on (a session running now keeps what it has).
func (be Boxes) Expose(name string, port, hostPort uint16) error {
	b, err := be.Lookup(name)
	if err != nil {
		return err
	}
	if policy.Tier(b.Network).SharesHostNet() {
		return &PortsTierError{Tier: policy.Tier(b.Network), What: "box expose " + name}
	}
	cur, err := readExposed(b)
	if err != nil {
		return err
	}
	for _, m := range cur {
		switch {
		case m.Sandbox == port:
			return &ExposeError{Box: name, Why: fmt.Sprintf("port %d is exposed already (at 127.0.0.1:%d)", port, m.Host)}
		case m.Host == hostPort:
			return &ExposeError{Box: name, Why: fmt.Sprintf("host port %d is the box's port %d's already", hostPort, m.Sandbox)}
		}
	}
	return writeExposed(b, append(cur, policy.PortMap{Host: hostPort, Sandbox: port}))
}

// Unexpose removes the exposure of the box's port (from the next session on).
func (be Boxes) Unexpose(name string, port uint16) error {
	b, err := be.Lookup(name)
	if err != nil {
		return err
	}
	cur, err := readExposed(b)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(cur, func(m policy.PortMap) bool { return m.Sandbox == port })
	if i < 0 {
		return &ExposeError{name, fmt.Sprintf("port %d is not exposed", port), true}
	}
	return writeExposed(b, slices.Delete(cur, i, i+1))
}

// Exposures lists the box's exposures, as the vm backend's.
func (be Boxes) Exposures(name string) ([]backend.Exposure, error) {
	b, err := be.Lookup(name)
	if err != nil {
		return nil, err
	}
	return exposuresOf(b)
}

func exposuresOf(b *dirbox.Box) ([]backend.Exposure, error) {
	cur, err := readExposed(b)
	out := []backend.Exposure{}
	for _, m := range cur {
		out = append(out, backend.Exposure{Port: int(m.Sandbox), HostPort: int(m.Host)})
	}
	return out, err
}

// boxPorts adds b's exposures to req: published at the session, a taken host port said
// and skipped (another program holds it; box's own sessions run one at a time).
func boxPorts(b *dirbox.Box, req *Request) error {
	cur, err := readExposed(b)
	if err != nil {
		return err
	}
	req.Exposed = cur
	return nil
}

// profilePorts adds to box info what the box's profile forwards at every session: its
// publish (as exposures of Device "profile") and its host_ports.
func profilePorts(b *dirbox.Box, out *backend.Info) {
	if b.Profile == nil {
		return
	}
	for _, m := range b.Profile.Publish {
		out.Exposed = append(out.Exposed, backend.Exposure{Device: "profile", Port: int(m.Sandbox), HostPort: int(m.Host)})
	}
	out.HostPorts = append([]int{}, b.Profile.HostPorts...)
}
