package incus

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is an error answered by the Incus API (a sync error response, or a failed
// operation). Message is the API's own text.
type Error struct {
	Status  int    // HTTP-like status code from the API (404, 400, 409, ...)
	Message string // the API's error text
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("incus: status %d", e.Status)
	}
	return e.Message
}

// IsNotFound reports whether err is an Incus "not found" answer.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// IsConflict reports whether err is an Incus "already exists" answer.
func IsConflict(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusConflict
}

// Cases incusd tells only in its message text: a failed operation's status is always
// 400 (Failure), whatever went wrong inside it, and these have no code of their own.
// Each is matched here, once, on the API's text (never on box's wrapping, which names
// the instance); callers test errors.Is(err, incus.ErrX), and the error's text is
// still incusd's own.
var (
	// ErrAgentNotRunning: a VM's agent does not answer (yet): incusd's "VM agent isn't
	// currently running", "Failed to connect to the agent", "Failed connecting to
	// agent: ...". Asked again, it answers once the VM has booted.
	ErrAgentNotRunning = errors.New("incus: the VM's agent is not running")
	// ErrImageExists: an image upload refused as one with the same fingerprint is
	// already there (incusd read the whole upload before saying so).
	ErrImageExists = errors.New("incus: an image with the same fingerprint already exists")
	// ErrExists: the name is taken (a 409, or, from inside an operation such as a
	// snapshot's, the database's "UNIQUE constraint failed").
	ErrExists = errors.New("incus: already exists")
	// ErrCommandNotFound: exec found no such command in the instance.
	ErrCommandNotFound = errors.New("incus: command not found")
)

// Is classifies incusd's answer for errors.Is against the Err values above.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrAgentNotRunning:
		return agentNotRunning(e.Message)
	case ErrImageExists:
		return strings.Contains(e.Message, "same fingerprint already exists")
	case ErrExists:
		return e.Status == http.StatusConflict || strings.Contains(e.Message, "UNIQUE constraint")
	case ErrCommandNotFound:
		return e.Message == "Command not found"
	}
	return false
}

// agentNotRunning: incusd says it only in text, each wording naming the agent.
func agentNotRunning(msg string) bool { return strings.Contains(msg, "agent") }
