package main

// A granted user's box finds incus-user's socket by itself, the way the incus CLI does:
// incusd's own socket when this process may write it (root, incus-admin), else
// incus-user's beside it, scoped to the user's project (user-UID, box grant's).

import (
	"os"
	"path/filepath"

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
