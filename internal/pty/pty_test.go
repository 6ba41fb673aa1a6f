package pty

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

func TestOpen(t *testing.T) {
	m, s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer s.Close()
	if !term.IsTerminal(int(s.Fd())) {
		t.Error("the slave is not a terminal")
	}
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if n, err := m.Read(buf); n != 1 || buf[0] != 'x' {
		t.Errorf("master read %q, %v", buf[:n], err)
	}
}

// The master stays in the runtime's poller: a deadline or a Close ends a read that waits
// on it (with the master in blocking mode, as its Fd leaves it, the read waits for
// output that may never come, and a Close does not even hang up the terminal).
func TestMasterReadEnds(t *testing.T) {
	m, s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := Ioctl(m, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 5, Col: 7})
	}); err != nil {
		t.Fatal(err)
	}
	if ws, err := unix.IoctlGetWinsize(int(s.Fd()), unix.TIOCGWINSZ); err != nil || ws.Row != 5 || ws.Col != 7 {
		t.Errorf("size %+v, %v", ws, err)
	}
	if err := m.SetReadDeadline(time.Now()); err != nil {
		t.Fatalf("no deadline on the master (blocking mode): %v", err)
	}
	if _, err := m.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past its deadline: %v", err)
	}
	m.SetReadDeadline(time.Time{})
	done := make(chan error)
	go func() {
		_, err := m.Read(make([]byte, 1))
		done <- err
	}()
	m.Close()
	if err := <-done; err == nil {
		t.Error("a read on a closed master succeeded")
	}
}
