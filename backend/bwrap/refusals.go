package bwrap

import (
	"fmt"

	"github.com/heavy-duty/box/backend"
)

// The bwrap box verbs' own refusals; the CLI words their hints (cmd/box/hints.go).

// NotFoundError: no bwrap box is called Name; Clone: the source of a clone.
type NotFoundError struct {
	Name  string
	Clone bool
}

func (e *NotFoundError) Error() string        { return fmt.Sprintf("no bwrap box named %q", e.Name) }
func (e *NotFoundError) Is(target error) bool { return target == backend.ErrNotFound }

// BoundError: box Box is bound to Workdir, whose facts cannot be gathered (Err).
type BoundError struct {
	Box, Workdir string
	Err          error
}

func (e *BoundError) Error() string { return "box " + e.Box + ": " + e.Err.Error() }
func (e *BoundError) Unwrap() error { return e.Err }
