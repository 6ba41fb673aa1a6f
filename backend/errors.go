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
)

// NameTakenError: name is taken in the backend Backend (the registry's answer).
type NameTakenError struct{ Name, Backend string }

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("the name %q is taken by the %s backend", e.Name, e.Backend)
}
func (e *NameTakenError) Is(target error) bool { return target == ErrNameTaken }

// UnsupportedError: the backend has no such verb (or not for this box); Hint says what
// to do instead.
type UnsupportedError struct{ Verb, Backend, Hint string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("box %s is not available for %s boxes", e.Verb, e.Backend)
}
