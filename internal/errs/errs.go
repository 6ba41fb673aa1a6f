// Package errs holds box's two error shapes, shared by the CLI and the packages it calls:
// a usage error (the operator asked wrong: exit code 2) and an error carrying a hint (what
// to do about it). The CLI prints "box: error: ..." and "box: hint: ..." from them.
package errs

import (
	"errors"
	"fmt"
)

// UsageError is an error in how box was asked: exit code 2.
type UsageError struct {
	Err  error
	hint string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Hint is the usage error's own hint, else the wrapped error's.
func (e *UsageError) Hint() string {
	if e.hint != "" {
		return e.hint
	}
	return HintOf(e.Err)
}

// Usage makes a usage error with a hint.
func Usage(hint, format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...), hint: hint}
}

// HintError attaches a fix to an error.
type HintError struct {
	Err  error
	hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }
func (e *HintError) Hint() string  { return e.hint }

// WithHint attaches hint to err.
func WithHint(err error, hint string) error { return &HintError{err, hint} }

// HintOf is the hint carried anywhere in err's chain, or "".
func HintOf(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

// IsUsage reports whether err is (or wraps) a usage error.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}
