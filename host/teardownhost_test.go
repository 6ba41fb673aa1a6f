package host

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

// A purge asked of a daemon that is not the system's is refused before incusd is asked
// anything (nothing answers at this socket, so any request would fail otherwise), and
// nothing is torn down.
func TestTeardownHostPurgeRefused(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "unix.socket")
	c := incus.New(sock)
	defer c.Close()
	steps, err := TeardownHost(context.Background(), c, TeardownRequest{PurgeIncus: true})
	var sys *NotSystemDaemonError
	if !errors.As(err, &sys) || sys.Socket != sock || len(steps) != 0 {
		t.Errorf("steps %v, error %v; want a NotSystemDaemonError naming %s", steps, err, sock)
	}
	// Without the purge, the teardown itself runs and meets the absent daemon.
	if _, err := TeardownHost(context.Background(), c, TeardownRequest{}); err == nil || errors.As(err, &sys) {
		t.Errorf("teardown on no daemon: %v", err)
	}
}
