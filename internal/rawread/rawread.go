// Package rawread reads a whole file with the open, read and close system calls alone.
//
// os.ReadFile also offers each file to the runtime's poller (an epoll_ctl refused for a
// regular file, with an fcntl before and after to set and clear O_NONBLOCK) and stats
// it for a size hint: some 15-25 µs a file on a VM where a system call is dear, against
// 7 µs for the three calls (issue 24). box reads a few dozen small files (/proc, its own
// state) on the way to every launch.
package rawread

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// ReadFile is os.ReadFile: the file's contents, or an *fs.PathError (Op "open" or
// "read") wrapping the errno, so errors.Is(err, fs.ErrNotExist) and the like hold as
// they do for os.ReadFile.
func ReadFile(name string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
