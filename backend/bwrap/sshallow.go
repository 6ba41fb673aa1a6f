package bwrap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/backend/bwrap/sshagent"
	"github.com/heavy-duty/box/policy"
)

// SSH hosts on the allowlist tier (docs/bwrap.md, "SSH agent", "Tiers"): SSH carries no
// name, so the tier's proxy admits TCP to an SSH host's port only on the address its own
// DNS answered for that host's name during the run (inet/allow_ssh.go). A host must
// therefore be an internet name, checked as an allow entry is.

// ProtSSHAllowlist is that admission (a test build can widen it to any address on an SSH
// host's port, as admitting by port alone would).
const ProtSSHAllowlist = "ssh-allowlist"

// sshAllowHosts are the run's SSH hosts as the allowlist tier's proxy admits them, or the
// first host that cannot be admitted by name (an address, a single label), refused
// with ErrSSHAllowlist.
func sshAllowHosts(hosts []string) ([]inet.SSHHost, error) {
	var out []inet.SSHHost
	for _, h := range hosts {
		name, port := sshagent.HostPort(h)
		p, err := policy.ParsePattern(name)
		if err == nil && (p.Port != 0 || p.Wildcard) {
			err = &policy.PatternError{Entry: name, Why: "not a host name"}
		}
		if err != nil {
			why := err.Error()
			if pe, ok := errors.AsType[*policy.PatternError](err); ok {
				why = pe.Why
			}
			return nil, &sshagent.HostError{Host: h, Err: fmt.Errorf("%w: %s", ErrSSHAllowlist, why)}
		}
		out = append(out, inet.SSHHost{Name: p.Host, Port: uint16(port)})
	}
	return out, nil
}

// sshByName are the run's SSH hosts the allowlist tier admits (nil without the filter).
func (p *Plan) sshByName() []inet.SSHHost {
	if p.SSH == nil {
		return nil
	}
	return p.SSH.ByName
}

// sshAllowText names them for the allowlist's start line ("" for none).
func sshAllowText(hs []inet.SSHHost) string {
	if len(hs) == 0 {
		return ""
	}
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.String()
	}
	return " and SSH to " + strings.Join(names, ", ") + " by name"
}
