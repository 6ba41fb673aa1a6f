package host

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/heavy-duty/box/backend/incus"
)

// SocketTrouble is why a user of the restricted tier cannot use the local socket: the
// CLI words the fix (cmd/box/usersocket.go).
type SocketTrouble int

const (
	NoSocketTrouble SocketTrouble = iota
	// UserSocketClosed: incus-user's socket is there but closed to this user (no grant
	// yet, or the grant's group not in this login); the admin socket refused them.
	UserSocketClosed
	// UserSocketHungUp: incus-user hung up on this user (a revoked grant, or none).
	UserSocketHungUp
)

// SocketTroubleOf classifies err, an error of the local socket sock, and names
// incus-user's socket beside it.
func SocketTroubleOf(sock string, err error) (t SocketTrouble, userSock string) {
	userSock = filepath.Join(filepath.Dir(sock), UserSocket)
	switch {
	case errors.Is(err, syscall.EACCES) && !IsUserSocket(sock):
		if _, serr := os.Stat(userSock); serr == nil {
			return UserSocketClosed, userSock
		}
	case IsUserSocket(sock) && (errors.Is(err, incus.ErrHungUp) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)):
		return UserSocketHungUp, userSock
	}
	return NoSocketTrouble, userSock
}
