package inet

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// SSH has no name on the wire (no SNI, no Host), so the allowlist tier admits an SSH host
// of the run (profile ssh.hosts, --ssh-host) by the only name it has: the synthetic
// address its own DNS answered for that name during this run. TCP to that address on the
// host's port is dialled to the name's real addresses (resolved on the host, blocked
// ranges refused as for every name); any other address, port or name is refused, and
// every SSH connection, admitted or refused, is one line of the tier's log.

// EventSSH is an SSH connection the proxy admitted (the log line's last field says where
// it dialled).
const EventSSH = "ssh"

// SSHHost is one SSH destination of the run: a host name (normalised) and its port.
type SSHHost struct {
	Name string
	Port uint16
}

func (h SSHHost) String() string { return h.Name + ":" + strconv.Itoa(int(h.Port)) }

// sshName reports whether name is an SSH host of the run, on any port.
func (p *Proxy) sshName(name string) bool {
	return slices.ContainsFunc(p.SSH, func(h SSHHost) bool { return h.Name == name })
}

// sshPort reports whether port is some SSH host's port.
func (p *Proxy) sshPort(port uint16) bool {
	return slices.ContainsFunc(p.SSH, func(h SSHHost) bool { return h.Port == port })
}

// resolvable reports whether DNS inside answers name: an allowed pattern's, or an SSH
// host's.
func (p *Proxy) resolvable(name string) bool {
	return p.Allow.Resolvable(name) || p.sshName(name)
}

// decideSSH admits a connection to an SSH host: synthName (the name DNS answered dst for,
// "" for none) is an SSH host of the run on port. ok is false when the connection is not
// one, and the allowlist's rules decide it.
func (p *Proxy) decideSSH(dst netip.Addr, port uint16, synthName string) (d Decision, up net.Conn, ok bool) {
	d.Dst = netip.AddrPortFrom(dst, port).String()
	d.SSH = true
	if p.SSHAnyAddress && synthName == "" && p.sshPort(port) {
		// The admission widened (test builds only): the sandbox's own address is dialled.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ap := netip.AddrPortFrom(dst, port)
		up, err := p.dial(ctx, ap)
		if err != nil {
			d.Reason = "connect failed: " + err.Error()
			return d, nil, true
		}
		d.Dialed = ap.String()
		return d, up, true
	}
	if synthName == "" || !slices.Contains(p.SSH, SSHHost{Name: synthName, Port: port}) {
		return Decision{}, nil, false
	}
	d.Name = synthName
	return d, p.connect(&d, port), true
}

// sshReason is why a connection the allowlist refused was not an SSH host's ("" when
// the name and port are none of the SSH hosts'): named by SNI or Host rather than by the
// address DNS answered, or on another port.
func (p *Proxy) sshReason(name string, port uint16) string {
	if !p.sshName(name) {
		return ""
	}
	if slices.Contains(p.SSH, SSHHost{Name: name, Port: port}) {
		return "an SSH host is admitted only on the address the tier's DNS answered for its name"
	}
	return "port " + strconv.Itoa(int(port)) + " is not this SSH host's port"
}
