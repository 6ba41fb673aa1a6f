package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

// The choice of the local socket: incusd's own when writable, else incus-user's (its
// client scoped to the user's project), else incusd's; $INCUS_SOCKET as given.
func TestLocalSocket(t *testing.T) {
	dir := t.TempDir()
	if got := LocalSocket("", dir); got != dir+"/unix.socket" {
		t.Errorf("nothing there: %s", got)
	}
	if err := os.WriteFile(dir+"/"+UserSocket, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if got := LocalSocket("", dir); got != dir+"/"+UserSocket || !IsUserSocket(got) {
		t.Errorf("only incus-user's: %s", got)
	}
	if c := LocalClient(LocalSocket("", dir)); c.Project != GrantProject(os.Getuid()) {
		t.Errorf("project on incus-user's socket: %q", c.Project)
	}
	if err := os.WriteFile(dir+"/unix.socket", nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if got := LocalSocket("", dir); got != dir+"/unix.socket" || IsUserSocket(got) {
		t.Errorf("both: %s", got)
	}
	if c := LocalClient(dir + "/unix.socket"); c.Project != "" {
		t.Errorf("project on incusd's own socket: %q", c.Project)
	}
	if got := LocalSocket("/elsewhere/unix.socket.user", dir); got != "/elsewhere/unix.socket.user" {
		t.Errorf("INCUS_SOCKET: %s", got)
	}
}

// SocketTroubleOf: refused at the admin socket with incus-user's beside it is a closed
// user socket; a hang-up on incus-user's is a revoked grant; anything else is no trouble.
func TestSocketTroubleOf(t *testing.T) {
	dir := t.TempDir()
	admin, user := filepath.Join(dir, "unix.socket"), filepath.Join(dir, UserSocket)
	if got, _ := SocketTroubleOf(admin, syscall.EACCES); got != NoSocketTrouble {
		t.Errorf("EACCES without incus-user's socket: %v", got)
	}
	if err := os.WriteFile(user, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sock string
		err  error
		want SocketTrouble
	}{
		{admin, fmt.Errorf("dial: %w", syscall.EACCES), UserSocketClosed},
		{admin, syscall.ECONNRESET, NoSocketTrouble},
		{user, syscall.EACCES, NoSocketTrouble},
		{user, syscall.ECONNRESET, UserSocketHungUp},
		{user, syscall.EPIPE, UserSocketHungUp},
		{user, io.EOF, UserSocketHungUp},
		{user, io.ErrUnexpectedEOF, UserSocketHungUp},
		// Go's transport noticed the close before writing: "server closed idle connection".
		{user, fmt.Errorf("%w: %w", incus.ErrHungUp, errors.New("http: server closed idle connection")), UserSocketHungUp},
		{user, syscall.ECONNREFUSED, NoSocketTrouble},
	} {
		got, us := SocketTroubleOf(c.sock, c.err)
		if got != c.want || us != user {
			t.Errorf("SocketTroubleOf(%s, %v) = %v, %s; want %v, %s", c.sock, c.err, got, us, c.want, user)
		}
	}
}
