package backend

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The refusals both backends' verbs share, in the backend's words; the CLI words their
// hints (cmd/box/hints.go), since a hint names box's verbs and flags.

// NoSnapshotError: box Box has no snapshot Name; Have lists those it has.
type NoSnapshotError struct {
	Box, Name string
	Have      []string
}

func (e *NoSnapshotError) Error() string {
	return fmt.Sprintf("box %q has no snapshot %q", e.Box, e.Name)
}
func (e *NoSnapshotError) Is(target error) bool { return target == ErrNoSnapshot }

// SnapshotExistsError: box Box has a snapshot Name already.
type SnapshotExistsError struct{ Box, Name string }

func (e *SnapshotExistsError) Error() string {
	return fmt.Sprintf("box %q already has a snapshot %q", e.Box, e.Name)
}
func (e *SnapshotExistsError) Is(target error) bool { return target == ErrSnapshotExists }

// TakenError: the name a verb wants is taken (Err says by what). Across: by the other
// backend; Verb: the verb that wanted it, File: the file of an import.
type TakenError struct {
	Name, Verb, File string
	Across           bool
	Err              error
}

func (e *TakenError) Error() string        { return e.Err.Error() }
func (e *TakenError) Unwrap() error        { return e.Err }
func (e *TakenError) Is(target error) bool { return target == ErrNameTaken }

// RunningError: Verb wants box Name stopped (Args: the verb's arguments after the name);
// Why says so.
type RunningError struct {
	Name, Verb, Why string
	Args            []string
}

func (e *RunningError) Error() string        { return fmt.Sprintf("box %q is running: %s", e.Name, e.Why) }
func (e *RunningError) Is(target error) bool { return target == ErrBusy }

// StoppedError: box Name must be running, and is State (stopped, frozen, ...).
type StoppedError struct{ Name, State string }

func (e *StoppedError) Error() string { return fmt.Sprintf("box %q is %s", e.Name, e.State) }

// PortArgError: What (a port argument of box expose on Box) is not a port.
type PortArgError struct {
	Box, What string
	Err       error
}

func (e *PortArgError) Error() string { return e.What + ": " + e.Err.Error() }
func (e *PortArgError) Unwrap() error { return e.Err }

// ErrNoName: box new was asked for a box without a name.
var ErrNoName = errors.New("box new needs a name")

// SettingsError: a verb was given settings (named as MintRequest.Given names them:
// "cpu", "network", "tty") that a box of Backend cannot honour, or (Clone) that a clone
// cannot, since it copies its source: refused by name, never ignored.
type SettingsError struct {
	Backend  string
	Clone    bool
	Settings []string
}

func (e *SettingsError) Error() string {
	who := "a " + e.Backend + " box"
	if e.Clone {
		who = "a clone"
	}
	return who + " cannot take " + strings.Join(e.Settings, ", ")
}

// RefuseSettings is the SettingsError for the settings of given (in its order) that
// are among bad, nil when there are none.
func RefuseSettings(given []string, backend string, clone bool, bad ...string) error {
	var hit []string
	for _, g := range given {
		if slices.Contains(bad, g) {
			hit = append(hit, g)
		}
	}
	if len(hit) == 0 {
		return nil
	}
	return &SettingsError{Backend: backend, Clone: clone, Settings: hit}
}

// FromError: a clone's source (MintRequest.From, BOX or BOX/SNAPSHOT) is not well formed.
type FromError struct{ Err error }

func (e *FromError) Error() string { return "from: " + e.Err.Error() }
func (e *FromError) Unwrap() error { return e.Err }

// ParseFrom splits a clone's source, BOX or BOX/SNAPSHOT, checking both names.
func ParseFrom(from string) (src, snap string, err error) {
	src, snap, hasSnap := strings.Cut(from, "/")
	if err := ValidName(src); err != nil {
		return "", "", &FromError{err}
	}
	if hasSnap {
		if err := ValidLabel(snap); err != nil {
			return "", "", &FromError{err}
		}
	}
	return src, snap, nil
}
