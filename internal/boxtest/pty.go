package boxtest

import (
	"bytes"
	"os"
	"testing"

	"github.com/heavy-duty/box/internal/pty"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

// OpenPTY opens a pseudo-terminal pair; without one the test skips.
func OpenPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		testenv.Skip(t, "no pseudo-terminal: "+err.Error())
	}
	return m, s
}

// OpenPty opens a pseudo-terminal pair; without one the test fails.
func OpenPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// SetSize sets the window size of the terminal f.
func SetSize(t *testing.T, f *os.File, rows, cols int) {
	t.Helper()
	ws := &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}
	if err := unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		t.Fatal(err)
	}
}

// SyncBuf is a buffer a reader goroutine writes while the test reads it.
type SyncBuf struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *SyncBuf) lock() {
	if b.mu == nil {
		b.mu = make(chan struct{}, 1)
	}
	b.mu <- struct{}{}
}

func (b *SyncBuf) Write(p []byte) {
	b.lock()
	b.buf.Write(p)
	<-b.mu
}

func (b *SyncBuf) String() string {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.String()
}
