package bwrap

import (
	"errors"
	"fmt"
	"testing"
)

// Each bwrap failure with a code of its own keeps it when wrapped; any other error has none.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		ok   bool
	}{
		{&AuditError{Err: errors.New("left a hook"), Code: 0}, ExitAudit, true},
		{&UsernsError{UsernsDiagnosis: UsernsDiagnosis{Cause: UsernsMaxZero}}, ExitStart, true},
		{&CommandError{Name: "nope", NotFound: true}, ExitNotFound, true},
		{&CommandError{Name: "x"}, ExitNotExecutable, true},
		{errors.New("plain"), 0, false},
	} {
		for _, err := range []error{c.err, fmt.Errorf("wrapped: %w", c.err)} {
			if code, ok := ExitCode(err); code != c.code || ok != c.ok {
				t.Errorf("%v: %d %v, want %d %v", err, code, ok, c.code, c.ok)
			}
		}
	}
}
