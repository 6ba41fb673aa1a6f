package backend

import (
	"fmt"

	"github.com/heavy-duty/box/internal/closest"
)

// NoBoxError is a box name that matches no box of any backend. It is found before the
// verb asks a backend anything about the box, so every verb says the same thing.
type NoBoxError struct {
	Name    string
	Closest []string // the nearest existing names, best first
	VMErr   error    // why vm boxes could not be checked (nil when they were)
}

func (e *NoBoxError) Error() string { return fmt.Sprintf("no box named %q", e.Name) }

// Is makes it an ErrNotFound.
func (e *NoBoxError) Is(target error) bool { return target == ErrNotFound }

// NoBox is the refusal for name, among the names that exist (Closest picks the
// nearest); vmErr is why the vm boxes could not be listed, if they could not.
func NoBox(name string, vmErr error, names []string) *NoBoxError {
	return &NoBoxError{Name: name, Closest: closest.Names(name, names), VMErr: vmErr}
}
