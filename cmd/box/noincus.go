package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// errNoIncus: the vm backend's daemon is not on this machine (its socket absent).
var errNoIncus = errors.New("no incusd")

// noIncusError says, in one line, that Incus is not installed or not running, and what
// to do: install (or start) it and set up the host, or use the bwrap backend.
type noIncusError struct {
	Socket    string
	Installed bool // the socket's directory exists: Incus is there but not running
}

func (e *noIncusError) Error() string {
	if e.Installed {
		return fmt.Sprintf("Incus is not running here (no socket at %s): start incusd and run 'sudo box setup-host' once, or use the bwrap backend (box new --backend bwrap, box run)", e.Socket)
	}
	return fmt.Sprintf("Incus is not installed here (no %s): install it and run 'sudo box setup-host', or use the bwrap backend (box new --backend bwrap, box run)", filepath.Dir(e.Socket))
}

func (e *noIncusError) Is(target error) bool { return target == errNoIncus }

// incusAbsent is a *noIncusError when the local incusd's socket is not there (a remote
// is the remote's to answer); nothing is dialled.
func incusAbsent(e *env) error {
	if e.remoteName() != "" {
		return nil
	}
	sock := e.localSocket()
	if _, err := os.Stat(sock); err == nil {
		return nil
	}
	_, dirErr := os.Stat(filepath.Dir(sock))
	return &noIncusError{Socket: sock, Installed: dirErr == nil}
}
