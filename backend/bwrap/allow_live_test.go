package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// AllowRunning's refusals, typed so the CLI can word them: every entry is checked
// before the run is chosen, no run is guessed, and a run that does not answer is said.
func TestAllowRunningRefusals(t *testing.T) {
	rt, data := t.TempDir(), t.TempDir()
	none := func(run, entry, added string) { t.Errorf("allowed %s in run %s with no sandbox running", entry, run) }
	if err := AllowRunning(rt, data, "zz", []string{"bad name!"}, none); err == nil || errors.As(err, new(*BadRunIDError)) {
		t.Errorf("a bad entry with a bad run: %v, want the entry's error first", err)
	}
	if err := AllowRunning(rt, data, "", []string{"github.com"}, none); !errors.Is(err, ErrNoAllowlistRun) {
		t.Errorf("no run running: %v, want ErrNoAllowlistRun", err)
	}
	if err := AllowRunning(rt, data, "zz", []string{"github.com"}, none); !errors.As(err, new(*BadRunIDError)) {
		t.Errorf("--run zz: %v, want a BadRunIDError", err)
	}
	var live *AllowLiveError
	if err := AllowRunning(rt, data, "0123abcd", []string{"github.com"}, none); !errors.As(err, &live) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a run with no socket: %v, want an AllowLiveError wrapping not-exist", err)
	} else if want := "run 0123abcd: allow github.com: dial unix " + filepath.Join(rt, "box", "0123abcd.sock") + ": connect: no such file or directory"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
