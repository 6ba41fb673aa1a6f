package bwrap

import (
	"slices"
	"testing"
)

// The session helper is bound before the root turns read-only, and the command runs
// through it, its own argv unchanged after the helper's "--".
func TestWithSession(t *testing.T) {
	args := []string{"--dir", "/run", "--remount-ro", "/", "--chdir", "/p", "--", "sh", "-c", "x -- y"}
	got := withSession(args, "/usr/bin/box")
	want := []string{"--dir", "/run", "--ro-bind", "/usr/bin/box", SessionPath, "--remount-ro", "/", "--chdir", "/p",
		"--", SessionPath, SessionSubcommand, "--", "sh", "-c", "x -- y"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := withSession([]string{"--ro-bind", "/a", "/a"}, "/usr/bin/box"); len(got) != 3 {
		t.Errorf("no command: %q", got)
	}
}
