package vm

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
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
