// Package fdfill runs out a test process's file descriptors for real, so a server's
// accept fails with EMFILE as it does under a flood, and gives them back.
package fdfill

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Fill lowers the soft RLIMIT_NOFILE to what the process holds plus a few, then opens
// /dev/null until the next open fails with EMFILE. The returned func closes them and
// restores the limit (also at cleanup). Tests using it must not run in parallel.
func Fill(t testing.TB) (release func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(ents)) + 8
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var fds []int
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(release)
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == unix.EMFILE {
			return release
		}
		if err != nil {
			release()
			t.Fatal(err)
		}
		fds = append(fds, fd)
	}
}
