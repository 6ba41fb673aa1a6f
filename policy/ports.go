package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// PortMap is one published port: the host's loopback port that reaches the sandbox's
// port (docker's -p order, HOST:SANDBOX; a bare PORT is the same number on both).
type PortMap struct {
	Host, Sandbox uint16
}

// String renders m as ParsePortMap reads it.
func (m PortMap) String() string {
	if m.Host == m.Sandbox {
		return strconv.Itoa(int(m.Sandbox))
	}
	return fmt.Sprintf("%d:%d", m.Host, m.Sandbox)
}

// ParsePort reads a TCP port number, 1 to 65535.
func ParsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// ParsePortMap reads PORT or HOSTPORT:SANDBOXPORT. An address is not taken: the host
// side is always the loopback.
func ParsePortMap(s string) (PortMap, error) {
	h, sb, ok := strings.Cut(s, ":")
	if !ok {
		p, err := ParsePort(s)
		return PortMap{p, p}, err
	}
	hp, err := ParsePort(h)
	if err != nil {
		return PortMap{}, fmt.Errorf("%q: host %w (the host side is always 127.0.0.1 and ::1; no address is taken)", s, err)
	}
	sp, err := ParsePort(sb)
	if err != nil {
		return PortMap{}, fmt.Errorf("%q: sandbox %w", s, err)
	}
	return PortMap{hp, sp}, nil
}

// UnmarshalTOML reads a profile's publish entry: 3000 or "8080:3000".
func (m *PortMap) UnmarshalTOML(v any) error {
	var err error
	switch x := v.(type) {
	case int64:
		if x < 1 || x > 65535 {
			return fmt.Errorf("port %d: want a number from 1 to 65535", x)
		}
		*m = PortMap{uint16(x), uint16(x)}
	case string:
		*m, err = ParsePortMap(x)
	default:
		err = fmt.Errorf("%v: want a port number or \"HOSTPORT:PORT\"", v)
	}
	return err
}

// CheckPorts refuses a host port published twice and a port out of range among the
// host ports a sandbox may reach.
func CheckPorts(publish []PortMap, hostPorts []int) error {
	seen := map[uint16]bool{}
	for _, m := range publish {
		if m.Host == 0 || m.Sandbox == 0 {
			return fmt.Errorf("publish %s: port 0 is not a port", m)
		}
		if seen[m.Host] {
			return fmt.Errorf("publish: host port %d is published twice", m.Host)
		}
		seen[m.Host] = true
	}
	for _, p := range hostPorts {
		if p < 1 || p > 65535 {
			return fmt.Errorf("host_ports: %d: want a number from 1 to 65535", p)
		}
	}
	return nil
}
