package main

// The local incusd's socket, whether it is there (host/noincus.go), and the hint of a
// granted user who cannot use it (host/usersockethint.go).

import "github.com/heavy-duty/box/host"

// localSocket is the socket of the local daemon (host.LocalSocket of $INCUS_SOCKET and
// $INCUS_DIR).
func (e *env) localSocket() string {
	return host.LocalSocket(e.getenv("INCUS_SOCKET"), e.getenv("INCUS_DIR"))
}

// userSocketHint is host.UserSocketHint on the local socket ("" on a remote).
func (e *env) userSocketHint(err error) string {
	if e.remoteName() != "" {
		return ""
	}
	return host.UserSocketHint(e.localSocket(), e.getenv("INCUS_SOCKET"), err)
}

// noIncusError: Incus is not installed or not running here (host.NoIncusError).
type noIncusError = host.NoIncusError

// incusAbsent is a *noIncusError when the local incusd's socket is not there (a remote
// is the remote's to answer); nothing is dialled.
func incusAbsent(e *env) error {
	if e.remoteName() != "" {
		return nil
	}
	return host.IncusAbsent(e.localSocket())
}
