package boxtest

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/pty"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

// OpenPTY opens a pseudo-terminal pair; without one the test skips.
func OpenPTY(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		testenv.Skip(t, "no pseudo-terminal: "+err.Error())
	}
	return m, s
}

// OpenPty opens a pseudo-terminal pair; without one the test fails.
func OpenPty(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// SetSize sets the window size of the terminal f.
func SetSize(t testing.TB, f *os.File, rows, cols int) {
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

// Screen is what a program wrote to a pseudo-terminal, read from its master as it
// comes; tests wait on it for a condition, never for a time.
type Screen struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	done bool // the master read ended (every slave closed)
}

// WatchPTY reads master into a Screen until the read fails.
func WatchPTY(master *os.File) *Screen {
	s := &Screen{}
	s.cond = sync.NewCond(&s.mu)
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := master.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			if err != nil {
				s.done = true
			}
			s.cond.Broadcast()
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return s
}

// String is everything read so far.
func (s *Screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// WaitFor waits until the screen shows want after offset from (a Len taken earlier),
// and returns the offset just past it; the test fails if it has not within the bound.
func (s *Screen) WaitFor(t testing.TB, from int, want string, within time.Duration) int {
	t.Helper()
	at := -1
	s.waitUntil(within, func() bool {
		if i := bytes.Index(s.buf.Bytes()[min(from, s.buf.Len()):], []byte(want)); i >= 0 {
			at = min(from, s.buf.Len()) + i + len(want)
		}
		return at >= 0 || s.done
	})
	if at < 0 {
		t.Fatalf("the terminal never showed %q (within %v); it shows:\n%q", want, within, s.String())
	}
	return at
}

// waitUntil waits until ok (called with s.mu held, after each read) or the bound.
func (s *Screen) waitUntil(within time.Duration, ok func() bool) {
	timer := time.AfterFunc(within, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	deadline := time.Now().Add(within)
	s.mu.Lock()
	defer s.mu.Unlock()
	for !ok() && time.Now().Before(deadline) {
		s.cond.Wait()
	}
}

// Len is how much has been read so far.
func (s *Screen) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Len()
}

// WaitEnd waits until the master's read has ended (every slave closed), so the screen
// holds all the program wrote: a program's exit does not mean its last bytes have been
// read from the master yet. It reports whether the read ended within the bound.
func (s *Screen) WaitEnd(within time.Duration) bool {
	s.waitUntil(within, func() bool { return s.done })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}
