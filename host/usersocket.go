package host

// A granted user's box finds incus-user's socket by itself, the way the incus CLI does:
// incusd's own socket when this process may write it (root, incus-admin), else
// incus-user's beside it, scoped to the user's project (user-UID, box grant's).

import (
	"os"
	"path/filepath"

	"github.com/heavy-duty/box/backend/incus"
	"golang.org/x/sys/unix"
)

// LocalSocket is the socket of the local daemon: incusSocket ($INCUS_SOCKET) when set,
// else incusDir's ($INCUS_DIR, or /var/lib/incus) unix.socket when writable, else its
// unix.socket.user when that is there, else unix.socket (whose error then says what is
// wrong).
func LocalSocket(incusSocket, incusDir string) string {
	if incusSocket != "" {
		return incusSocket
	}
	dir := filepath.Dir(incus.DefaultSocket)
	if incusDir != "" {
		dir = incusDir
	}
	admin := filepath.Join(dir, "unix.socket")
	if unix.Access(admin, unix.W_OK) == nil {
		return admin
	}
	if user := filepath.Join(dir, UserSocket); unix.Access(user, unix.W_OK) == nil {
		return user
	}
	return admin
}

// IsUserSocket: the socket is incus-user's (a granted user's way in).
func IsUserSocket(sock string) bool { return filepath.Base(sock) == UserSocket }

// LocalClient is the client of the local socket sock; on incus-user's it is scoped to
// this user's project.
func LocalClient(sock string) *incus.Client {
	c := incus.New(sock)
	if IsUserSocket(sock) {
		c.Project = GrantProject(os.Getuid())
	}
	return c
}
