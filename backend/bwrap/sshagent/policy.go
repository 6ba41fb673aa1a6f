// Package sshagent is box's filtering ssh-agent: it serves the agent protocol inside a
// sandbox, backed by the host's agent outside, and signs only what the profile allows: a
// user-authentication request on a connection bound (session-bind@openssh.com, OpenSSH
// 8.9+) to an allowed host's key, and git's SSH signatures (namespace "git") when signing
// is on. It lists only the chosen keys and refuses every change to the host's agent. The
// private keys never leave the host's agent; the host's agent socket is never shown to the
// sandbox. The wire format is golang.org/x/crypto/ssh's: requests are parsed with
// ssh.Unmarshal into structs, never by hand.
package sshagent

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Host is one destination the sandbox may authenticate to: its name as the user wrote it
// ("github.com", "git.example.org:2222") and the host keys a session-bind must carry.
type Host struct {
	Name string
	Keys []ssh.PublicKey
}

// Addr is the host's known_hosts form: "name" for port 22, "[name]:port" otherwise.
func (h Host) Addr() string { return knownhosts.Normalize(h.Name) }

// Policy is what the filter allows. It is final: the filter reads it and nothing else.
type Policy struct {
	// Keys chooses the host agent's keys the sandbox sees: "SHA256:..." fingerprints or
	// the keys' comments. Empty: no key at all (never "all keys").
	Keys []string
	// Hosts are the destinations a user-authentication signature may be made for.
	Hosts []Host
	// Sign allows git's SSH signatures (ssh-keygen -Y sign -n git).
	Sign bool
}

// ErrHostSpec: a host as written in a profile or --ssh-host is not a host name with an
// optional port.
var ErrHostSpec = errors.New("not an SSH host (want NAME or NAME:PORT)")

// ErrNoHostKey: an allowed host has no key in known_hosts nor in the profile's host_keys,
// so no session to it could ever be verified.
var ErrNoHostKey = errors.New("no host key known")

// ErrHostKeyLine: a profile's host_keys entry is not a known_hosts line naming an allowed
// host.
var ErrHostKeyLine = errors.New("not a known_hosts line for an allowed host")

// HostError names the host a host error is about.
type HostError struct {
	Host string
	Err  error
}

func (e *HostError) Error() string { return fmt.Sprintf("ssh host %q: %v", e.Host, e.Err) }
func (e *HostError) Unwrap() error { return e.Err }

// CheckHost validates a host as written: NAME or NAME:PORT (or [NAME]:PORT), no user, no
// pattern, no spaces.
func CheckHost(spec string) error {
	name, port := spec, ""
	if h, p, err := net.SplitHostPort(spec); err == nil {
		name, port = h, p
	} else if strings.HasPrefix(spec, "[") {
		return &HostError{Host: spec, Err: ErrHostSpec}
	}
	if name == "" || strings.ContainsAny(name, "@*?!,| \t[]/\\") {
		return &HostError{Host: spec, Err: ErrHostSpec}
	}
	if port != "" {
		n := 0
		for _, c := range port {
			if c < '0' || c > '9' {
				return &HostError{Host: spec, Err: ErrHostSpec}
			}
			n = n*10 + int(c-'0')
			if n > 65535 {
				return &HostError{Host: spec, Err: ErrHostSpec}
			}
		}
		if n == 0 {
			return &HostError{Host: spec, Err: ErrHostSpec}
		}
	}
	return nil
}

// HostPort splits an allowed host into the name DNS resolves and the TCP port (22 when
// not written).
func HostPort(spec string) (string, int) {
	if h, p, err := net.SplitHostPort(spec); err == nil {
		n := 0
		for _, c := range p {
			n = n*10 + int(c-'0')
		}
		return h, n
	}
	return spec, 22
}

// Fingerprint is the key's "SHA256:..." form, as ssh-add -l prints it.
func Fingerprint(k ssh.PublicKey) string { return ssh.FingerprintSHA256(k) }

// chosen reports whether a key (with its comment) is one the policy names.
func (p *Policy) chosen(k ssh.PublicKey, comment string) bool {
	fp := Fingerprint(k)
	for _, want := range p.Keys {
		if want == fp || (comment != "" && want == comment) {
			return true
		}
	}
	return false
}

// hostFor names the allowed host a host key belongs to ("" when none).
func (p *Policy) hostFor(k ssh.PublicKey) string {
	blob := string(k.Marshal())
	for _, h := range p.Hosts {
		for _, hk := range h.Keys {
			if string(hk.Marshal()) == blob {
				return h.Name
			}
		}
	}
	return ""
}
