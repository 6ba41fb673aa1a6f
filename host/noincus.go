package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoIncus: the vm backend's daemon is not on this machine (its socket absent).
var ErrNoIncus = errors.New("no incusd")

// NoIncusError says that Incus is not installed or not running (the CLI's hint says what
// to do: install or start it and set up the host, or use the bwrap backend).
type NoIncusError struct {
	Socket    string
	Installed bool // the socket's directory exists: Incus is there but not running
}

func (e *NoIncusError) Error() string {
	if e.Installed {
		return fmt.Sprintf("Incus is not running here (no socket at %s)", e.Socket)
	}
	return fmt.Sprintf("Incus is not installed here (no %s)", filepath.Dir(e.Socket))
}

func (e *NoIncusError) Is(target error) bool { return target == ErrNoIncus }

// IncusAbsent is a *NoIncusError when the local incusd's socket sock is not there;
// nothing is dialled. (A remote is the remote's to answer: the caller asks only for
// the local daemon.)
func IncusAbsent(sock string) error {
	if _, err := os.Stat(sock); err == nil {
		return nil
	}
	_, dirErr := os.Stat(filepath.Dir(sock))
	return &NoIncusError{Socket: sock, Installed: dirErr == nil}
}
