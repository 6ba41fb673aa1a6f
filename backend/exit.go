package backend

import "fmt"

// ExitError carries the exit code of a command run in a box (box exec, box shell): it
// is box's own, and nothing is printed for it.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }
