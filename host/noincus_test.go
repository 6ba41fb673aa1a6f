package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A socket there is no finding; its directory without it is Incus stopped; neither is
// Incus not installed. Both match ErrNoIncus.
func TestIncusAbsent(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "unix.socket")
	var ne *NoIncusError
	if err := IncusAbsent(sock); !errors.As(err, &ne) || !ne.Installed || !errors.Is(err, ErrNoIncus) {
		t.Errorf("directory, no socket: %v", err)
	}
	if err := IncusAbsent(filepath.Join(dir, "gone", "unix.socket")); !errors.As(err, &ne) || ne.Installed {
		t.Errorf("no directory: %v", err)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := IncusAbsent(sock); err != nil {
		t.Errorf("socket there: %v", err)
	}
}
