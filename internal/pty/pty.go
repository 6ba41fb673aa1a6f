// Package pty opens pseudo-terminal pairs, for the drill (a verb that wants a terminal)
// and for tests that must see a terminal exactly as a user's.
package pty

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open returns a new pseudo-terminal's master and slave, both close-on-exec and neither
// made the caller's controlling terminal. The master stays in the runtime's poller, so
// its Close and deadlines end a read or write that waits on it; ioctls on it go through
// Ioctl (its Fd would put it in blocking mode for good, and a Close would then wait for a
// read that may never return).
func Open() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var n int
	err = Ioctl(m, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return err
	})
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

// Ioctl runs f on f's descriptor without taking it out of the runtime's poller (as
// os.File.Fd does).
func Ioctl(file *os.File, f func(fd int) error) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
