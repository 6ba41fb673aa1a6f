package main

// A granted user's box finds incus-user's socket by itself (host/usersocket.go); what
// this file words is the hint of a user who cannot use it.

import (
	"os/user"

	"github.com/heavy-duty/box/host"
)

// localSocket is the socket of the local daemon (host.LocalSocket of $INCUS_SOCKET and
// $INCUS_DIR).
func (e *env) localSocket() string {
	return host.LocalSocket(e.getenv("INCUS_SOCKET"), e.getenv("INCUS_DIR"))
}

// userSocketHint is the hint of a local socket error a user of the restricted tier
// meets: incus-user's socket there but closed to them (no grant yet, or the new group
// not in this login), or incus-user hanging up (a revoked grant). "" otherwise.
func (e *env) userSocketHint(err error) string {
	if e.remoteName() != "" || e.getenv("INCUS_SOCKET") != "" && !host.IsUserSocket(e.getenv("INCUS_SOCKET")) {
		return ""
	}
	name := "USER"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	switch t, us := host.SocketTroubleOf(e.localSocket(), err); t {
	case host.UserSocketClosed:
		return "incus-user's socket " + us + " is there but not open to you: the operator gives you a project of your own with 'box grant " + name + "' (its group takes effect at your next login)"
	case host.UserSocketHungUp:
		return "incus-user hung up on you: your grant was revoked, or never made; ask the operator ('box grant " + name + "', 'box doctor' says which)"
	}
	return ""
}
