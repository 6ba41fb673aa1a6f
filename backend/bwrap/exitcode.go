package bwrap

import "errors"

// ExitCode is box's exit code for a bwrap failure that has its own: a failed post-run
// audit (ExitAudit), a sandbox that could not start (ExitStart), a command not found or
// not executable (CommandError.Code). ok is false for any other error.
func ExitCode(err error) (code int, ok bool) {
	var ue *UsernsError
	var ce *CommandError
	switch {
	case IsAuditError(err):
		return ExitAudit, true
	case errors.As(err, &ue):
		return ExitStart, true
	case errors.As(err, &ce):
		return ce.Code(), true
	}
	return 0, false
}
