package bwrap

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/policy"
)

// Ports: a sandbox with a network namespace of its own (tiers none, allowlist, internet)
// can publish its ports on the host's loopback and reach the host ports the operator
// names, nothing else. box does both itself (forward.go): the host side listens on
// 127.0.0.1 and ::1 only; inside, host.box.internal is an address on the sandbox's own
// loopback where a helper box started in the sandbox's network namespace listens on the
// named ports only. See docs/bwrap.md, "Ports".

// ProtPorts narrows the forwarding to what was named (a test build can widen it: the
// published ports on every host address, and every host loopback port reachable, so the
// drill can show the breach).
const ProtPorts = "ports"

// HostAliasName is the name the sandbox reaches the named host ports by, in its
// /etc/hosts; HostAlias is its address: on the sandbox's own loopback (127.0.0.0/8 is
// local on lo in every namespace, and the allowlist tier's filter leaves it alone), not
// 127.0.0.1, so a server the sandbox runs on the same port does not collide with it.
const HostAliasName = "host.box.internal"

var HostAlias = netip.MustParseAddr("127.254.0.1")

// Ports is what a sandbox publishes and reaches (Spec.Ports).
type Ports struct {
	// Publish: host loopback port -> sandbox port.
	Publish []policy.PortMap
	// HostPorts: the host's 127.0.0.1 ports the sandbox reaches at HostAlias.
	HostPorts []uint16
	// HostsFile is the instance directory's file bound at /etc/hosts (the host's, plus
	// HostAliasName), when HostPorts is set.
	HostsFile string
	// Shared are the host ports of Publish that a persistent box's exposures name:
	// a taken one (another program holds it) is said, not an error: the session goes on.
	Shared []uint16
}

// Any reports whether anything is forwarded.
func (p Ports) Any() bool { return len(p.Publish) > 0 || len(p.HostPorts) > 0 }

// PortsTierError: tier full shares the host's network, so publishing or reaching a host
// port is refused rather than accepted and ignored.
type PortsTierError struct {
	Tier policy.Tier
	What string // the flag or key asking
}

func (e *PortsTierError) Error() string {
	return fmt.Sprintf("%s: network %q shares the host's network: the sandbox's ports are the host's already, and every host port is reachable; nothing is forwarded", e.What, e.Tier)
}

// PortsIsolationError: the Landlock mode has no network namespace to forward into.
var errPortsLandlock = &IsolationError{"published or host ports", "it has no network namespace of its own to forward into (tier none there is a socket filter)"}

// PortTakenError: a host port to publish is taken (or cannot be bound); found before the
// sandbox starts.
type PortTakenError struct {
	Addr string // 127.0.0.1:8080 or [::1]:8080
	Err  error
}

func (e *PortTakenError) Error() string {
	return fmt.Sprintf("publish: cannot listen on %s: %v", e.Addr, e.Err)
}
func (e *PortTakenError) Unwrap() error { return e.Err }

// resolvePorts merges the request's ports with the profile's and refuses them in tier
// full. Pure.
func (p *Plan) resolvePorts(r Request, network policy.Tier, instanceDir string) error {
	var pr Ports
	seen := map[uint16]bool{}
	for _, m := range append(append([]policy.PortMap{}, r.Profile.Publish...), r.Publish...) {
		if seen[m.Host] {
			// The flag may repeat the profile's very mapping; another sandbox port on the
			// same host port is a mistake.
			if i := slices.IndexFunc(pr.Publish, func(o policy.PortMap) bool { return o.Host == m.Host }); pr.Publish[i] != m {
				return fmt.Errorf("publish: host port %d is published twice (%s and %s)", m.Host, pr.Publish[i], m)
			}
			continue
		}
		seen[m.Host] = true
		pr.Publish = append(pr.Publish, m)
	}
	for _, m := range r.Exposed {
		if !seen[m.Host] {
			seen[m.Host] = true
			pr.Publish = append(pr.Publish, m)
			pr.Shared = append(pr.Shared, m.Host)
		}
	}
	for _, h := range r.Profile.HostPorts {
		pr.HostPorts = append(pr.HostPorts, uint16(h))
	}
	pr.HostPorts = append(pr.HostPorts, r.HostPorts...)
	slices.Sort(pr.HostPorts)
	pr.HostPorts = slices.Compact(pr.HostPorts)
	if !pr.Any() {
		return nil
	}
	if network.SharesHostNet() {
		what := "--publish"
		if len(pr.Publish) == 0 {
			what = "--host-port"
		}
		return &PortsTierError{Tier: network, What: what}
	}
	if len(pr.HostPorts) > 0 {
		pr.HostsFile = instanceDir + "/hosts"
		p.warn("the sandbox can reach the host's 127.0.0.1 port(s) %s as %s (host ports)", portList(pr.HostPorts), HostAliasName)
	}
	p.Spec.Ports = pr
	p.Policy.Ports = pr
	return nil
}

// checkPortsIsolation refuses ports in the Landlock mode (after resolveIsolation).
func (p *Plan) checkPortsIsolation() error {
	if p.Isolation.Landlock() && p.Spec.Ports.Any() {
		return errPortsLandlock
	}
	return nil
}

func portList(ps []uint16) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

// PublishedLines say what the sandbox publishes and reaches: the dry run, the launch's
// report and SANDBOX.md. Empty when nothing is forwarded.
func (p Ports) Lines() []string {
	var out []string
	for _, m := range p.Publish {
		out = append(out, fmt.Sprintf("published: 127.0.0.1:%d and [::1]:%d (where the host has it) -> the sandbox's port %d", m.Host, m.Host, m.Sandbox))
	}
	if len(p.HostPorts) > 0 {
		out = append(out, fmt.Sprintf("host ports: %s:%s inside -> the host's 127.0.0.1 (no other host port)", HostAliasName, portList(p.HostPorts)))
	}
	return out
}

// PortsLine is the dry run's account of the ports.
func (p *Plan) PortsLine() string {
	l := p.Spec.Ports.Lines()
	if len(l) == 0 {
		return "ports: none published; no host port reachable"
	}
	return "ports: " + strings.Join(l, "; ")
}

// hostsFile is /etc/hosts inside: the host's, then the alias.
func hostsFile(host []byte) []byte {
	out := append([]byte{}, host...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, fmt.Sprintf("# box: the host's named ports (--host-port)\n%s\t%s\n", HostAlias, HostAliasName)...)
}

// ReportPorts says, before launch, what the sandbox publishes and reaches (quiet: not
// said; the host ports' warning is printed regardless).
func (p *Plan) ReportPorts(w io.Writer, quiet bool) {
	if quiet {
		return
	}
	for _, l := range p.Spec.Ports.Lines() {
		fmt.Fprintf(w, "box: %s\n", l)
	}
}

// portsText is SANDBOX.md's part about the ports ("" when nothing is forwarded).
func portsText(p Ports) string {
	if !p.Any() {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Ports\n\n")
	for _, m := range p.Publish {
		fmt.Fprintf(&b, "- Port %d here is published to the operator as http://127.0.0.1:%d/ (on their loopback only). Listen on 127.0.0.1 or localhost: box connects to your port from inside.\n", m.Sandbox, m.Host)
	}
	if len(p.HostPorts) > 0 {
		fmt.Fprintf(&b, "- The operator's own services on port(s) %s are reachable as `%s` (for example `%s:%d`); `127.0.0.1` is this sandbox's own loopback. No other port of the operator's machine is reachable.\n", portList(p.HostPorts), HostAliasName, HostAliasName, p.HostPorts[0])
	}
	b.WriteString("\n")
	return b.String()
}
