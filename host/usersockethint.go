package host

import "os/user"

// UserSocketHint is the hint of a local socket error a user of the restricted tier
// meets on sock (the local socket; envSocket is $INCUS_SOCKET): incus-user's socket
// there but closed to them (no grant yet, or the new group not in this login), or
// incus-user hanging up (a revoked grant). "" otherwise.
func UserSocketHint(sock, envSocket string, err error) string {
	if envSocket != "" && !IsUserSocket(envSocket) {
		return ""
	}
	name := "USER"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	switch t, us := SocketTroubleOf(sock, err); t {
	case UserSocketClosed:
		return "incus-user's socket " + us + " is there but not open to you: the operator gives you a project of your own with 'box grant " + name + "' (its group takes effect at your next login)"
	case UserSocketHungUp:
		return "incus-user hung up on you: your grant was revoked, or never made; ask the operator ('box grant " + name + "', 'box doctor' says which)"
	}
	return ""
}
