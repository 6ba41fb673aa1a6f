package drill

import (
	"fmt"
	"syscall"
	"testing"
)

// TestErrName: the errnos a drill row expects are shortened to their names, wrapped or
// not; any other keeps its message.
func TestErrName(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.ENOENT: "ENOENT", syscall.EACCES: "EACCES", syscall.EPERM: "EPERM", syscall.EROFS: "EROFS",
		syscall.EEXIST: "EEXIST", syscall.ENETUNREACH: "ENETUNREACH", syscall.EHOSTUNREACH: "EHOSTUNREACH",
		syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ETIMEDOUT: "ETIMEDOUT", syscall.ENOSPC: "ENOSPC",
		syscall.EINVAL: "EINVAL", syscall.EAGAIN: "EAGAIN", syscall.ENOMEM: "ENOMEM",
		syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL", syscall.ENOTDIR: "ENOTDIR",
		syscall.EBADF: syscall.EBADF.Error(),
	} {
		if got := errName(fmt.Errorf("open x: %w", errno)); got != want {
			t.Errorf("errName(%v) = %q, want %q", errno, got, want)
		}
	}
}
