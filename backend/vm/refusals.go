package vm

import "fmt"

// The vm verbs' own refusals; the CLI words their hints (cmd/box/hints.go).

// GoneError: box Name went away while a verb was asking about it.
type GoneError struct{ Name string }

func (e *GoneError) Error() string {
	return fmt.Sprintf("box %q went away while box was asking (renamed or deleted): nothing was done", e.Name)
}

// StopError: box Name did not stop cleanly in time (Err says why).
type StopError struct {
	Name string
	Err  error
}

func (e *StopError) Error() string { return e.Err.Error() }
func (e *StopError) Unwrap() error { return e.Err }

// OpenError: the file an import names cannot be opened.
type OpenError struct{ Err error }

func (e *OpenError) Error() string { return "import: " + e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// PlacementError: the placement profile Profile is missing, in incusd or (Remote) on
// that remote.
type PlacementError struct{ Profile, Remote string }

func (e *PlacementError) Error() string {
	if e.Remote != "" {
		return fmt.Sprintf("placement profile %q does not exist on remote %s", e.Profile, e.Remote)
	}
	return fmt.Sprintf("placement profile %q does not exist in incusd", e.Profile)
}

// DoorError: box Box has no door to Port, or (HostPort > 0) has one already.
type DoorError struct {
	Box            string
	Port, HostPort int
}

func (e *DoorError) Error() string {
	if e.HostPort > 0 {
		return fmt.Sprintf("box %q already exposes port %d (at 127.0.0.1:%d)", e.Box, e.Port, e.HostPort)
	}
	return fmt.Sprintf("box %q has no door to port %d", e.Box, e.Port)
}
