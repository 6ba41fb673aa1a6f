package host

import (
	"os"
	"testing"
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
