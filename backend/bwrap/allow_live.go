package bwrap

import (
	"errors"
	"fmt"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/policy"
)

// ErrNoAllowlistRun: box allow named no run and no allowlist sandbox is running.
var ErrNoAllowlistRun = errors.New("no allowlist sandbox is running")

// ManyRunsError: box allow named no run and several allowlist sandboxes are running.
type ManyRunsError struct{ IDs []string }

func (e *ManyRunsError) Error() string {
	return fmt.Sprintf("%d allowlist sandboxes are running", len(e.IDs))
}

// BadRunIDError: the run named is no run ID (ValidRunID).
type BadRunIDError struct{ ID string }

func (e *BadRunIDError) Error() string { return fmt.Sprintf("%q: not a run ID", e.ID) }

// AllowLiveError: the running sandbox did not take an entry.
type AllowLiveError struct {
	Run, Entry string
	Err        error
}

func (e *AllowLiveError) Error() string {
	return fmt.Sprintf("run %s: allow %s: %v", e.Run, e.Entry, e.Err)
}
func (e *AllowLiveError) Unwrap() error { return e.Err }

// AllowRunning is box allow: every entry is checked before anything changes (a
// policy.ParseAllow error), the run is the one named, else the only allowlist sandbox
// running; then each entry is allowed live in turn, done told what was added
// ("(already allowed)" when nothing was).
func AllowRunning(runtimeDir, dataHome, run string, entries []string, done func(run, entry, added string)) error {
	for _, a := range entries {
		if _, err := policy.ParseAllow([]string{a}); err != nil {
			return err
		}
	}
	if run == "" {
		ids := RunningAllowlists(runtimeDir, dataHome)
		switch len(ids) {
		case 0:
			return ErrNoAllowlistRun
		case 1:
			run = ids[0]
		default:
			return &ManyRunsError{IDs: ids}
		}
	} else if !ValidRunID(run) {
		return &BadRunIDError{ID: run}
	}
	sock := ControlSocket(runtimeDir, dataHome, run)
	for _, a := range entries {
		added, err := inet.AllowLive(sock, a)
		if err != nil {
			return &AllowLiveError{Run: run, Entry: a, Err: err}
		}
		done(run, a, added)
	}
	return nil
}
