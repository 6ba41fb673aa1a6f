package main

// A granted user's box finds incus-user's socket by itself, the way the incus CLI does:
// incusd's own socket when this process may write it (root, incus-admin), else
// incus-user's beside it, scoped to the user's project (user-UID, box grant's).

import (
	"errors"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"syscall"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/host"
	"golang.org/x/sys/unix"
)

// localSocket is the socket of the local daemon: $INCUS_SOCKET, else INCUS_DIR's (or
// /var/lib/incus's) unix.socket when writable, else its unix.socket.user when that is
// there, else unix.socket (whose error then says what is wrong).
func (e *env) localSocket() string {
	if s := e.getenv("INCUS_SOCKET"); s != "" {
		return s
	}
	dir := filepath.Dir(incus.DefaultSocket)
	if d := e.getenv("INCUS_DIR"); d != "" {
		dir = d
	}
	admin := filepath.Join(dir, "unix.socket")
	if unix.Access(admin, unix.W_OK) == nil {
		return admin
	}
	if user := filepath.Join(dir, host.UserSocket); unix.Access(user, unix.W_OK) == nil {
		return user
	}
	return admin
}

// isUserSocket: the socket is incus-user's (a granted user's way in).
func isUserSocket(sock string) bool { return filepath.Base(sock) == host.UserSocket }

// localClient is the client of the local daemon; on incus-user's socket it is scoped
// to this user's project.
func (e *env) localClient() *incus.Client {
	sock := e.localSocket()
	c := incus.New(sock)
	if isUserSocket(sock) {
		c.Project = host.GrantProject(os.Getuid())
	}
	return c
}

// userSocketHint is the hint of a local socket error a user of the restricted tier
// meets: incus-user's socket there but closed to them (no grant yet, or the new group
// not in this login), or incus-user hanging up (a revoked grant). "" otherwise.
func (e *env) userSocketHint(err error) string {
	if e.remoteName() != "" || e.getenv("INCUS_SOCKET") != "" && !isUserSocket(e.getenv("INCUS_SOCKET")) {
		return ""
	}
	name := "USER"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	sock := e.localSocket()
	us := filepath.Join(filepath.Dir(sock), host.UserSocket)
	switch {
	case errors.Is(err, syscall.EACCES) && !isUserSocket(sock):
		if _, serr := os.Stat(us); serr != nil {
			return ""
		}
		return "incus-user's socket " + us + " is there but not open to you: the operator gives you a project of your own with 'box grant " + name + "' (its group takes effect at your next login)"
	case isUserSocket(sock) && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return "incus-user hung up on you: your grant was revoked, or never made; ask the operator ('box grant " + name + "', 'box doctor' says which)"
	}
	return ""
}
