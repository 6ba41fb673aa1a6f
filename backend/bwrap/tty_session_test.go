package bwrap

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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

// A terminal box cannot make names its cause, each errno to one, and keeps the errno.
func TestTerminalError(t *testing.T) {
	for errno, want := range map[unix.Errno]TerminalCause{
		unix.ENOSPC: TerminalExhausted, unix.ENOENT: TerminalMissing, unix.ENXIO: TerminalMissing,
		unix.EACCES: TerminalDenied, unix.EBUSY: TerminalBusy, unix.EINVAL: TerminalUnknown,
	} {
		e := terminalError(&os.PathError{Op: "open", Path: "/dev/ptmx", Err: errno})
		if e.Cause != want || !errors.Is(e, errno) {
			t.Errorf("%v: cause %v, want %v (errno kept: %v)", errno, e.Cause, want, errors.Is(e, errno))
		}
		if want != TerminalUnknown && !strings.Contains(e.Error(), "(open /dev/ptmx: ") {
			t.Errorf("%v: %q", errno, e.Error())
		}
	}
}
