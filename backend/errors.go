package backend

import (
	"errors"
	"fmt"
)

// The typed answers a verb may get from a backend; each backend's own error types
// match them with errors.Is (an Is method) while keeping their own wording.
var (
	ErrNotFound       = errors.New("no such box")
	ErrBusy           = errors.New("box in use")
	ErrNameTaken      = errors.New("name taken")
	ErrSnapshotExists = errors.New("snapshot exists")
	ErrNoSnapshot     = errors.New("no such snapshot")
	// ErrIncusStopped: Incus is installed, its daemon's socket is missing (a NoBoxError's
	// VMErr when the vm boxes could not be asked for that reason).
	ErrIncusStopped = errors.New("Incus is installed, but incusd is not running")
)

// NameTakenError: name is taken in the backend Backend (the registry's answer).
type NameTakenError struct{ Name, Backend string }

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("the name %q is taken by the %s backend", e.Name, e.Backend)
}
func (e *NameTakenError) Is(target error) bool { return target == ErrNameTaken }

// UnsupportedError: box Name belongs to the Backend backend, which has no verb Verb (the
// CLI words the hint: what to do with such a box instead).
type UnsupportedError struct{ Verb, Backend, Name string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("box %s is a %s box: box %s is for vm boxes", e.Name, e.Backend, e.Verb)
}
