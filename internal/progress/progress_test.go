package progress

import (
	"bytes"
	"github.com/heavy-duty/box/internal/pty"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

func steps(l *Line) {
	l.Step("creating %s", "work")
	l.Step("starting %s", "work")
	l.Done()
	l.Done() // twice: still one clear
}

func TestSilentOffATerminal(t *testing.T) {
	var buf bytes.Buffer
	steps(New(&buf, false))
	if buf.Len() != 0 {
		t.Errorf("a buffer got %q", buf.String())
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	l := New(w, false)
	steps(l)
	w.Close()
	b, _ := io.ReadAll(r)
	if len(b) != 0 || l.On() {
		t.Errorf("a pipe got %q", b)
	}
	var nilLine *Line
	steps(nilLine)
}

// openPTY is a real pseudo-terminal: the line must see a terminal exactly as a user's.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s, err := pty.Open()
	if err != nil {
		testenv.Skip(t, "no pseudo-terminal: "+err.Error())
	}
	// Raw output: what is written arrives as written (no \n → \r\n).
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

func readFor(t *testing.T, m *os.File, d time.Duration) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 4096)
	fd := int(m.Fd())
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(d/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return string(out)
		}
		k, err := unix.Read(fd, buf)
		if err != nil || k <= 0 {
			return string(out)
		}
		out = append(out, buf[:k]...)
	}
}

func TestDrawnOnATerminal(t *testing.T) {
	m, s := openPTY(t)
	l := New(s, false)
	if !l.On() {
		t.Fatal("a pty is not taken for a terminal")
	}
	steps(l)
	got := readFor(t, m, 300*time.Millisecond)
	want := "\r\033[Kbox: creating work (0s)\r\033[Kbox: starting work (0s)\r\033[K"
	if got != want {
		t.Errorf("terminal got %q\nwant         %q", got, want)
	}
	if strings.Contains(got, "\n") {
		t.Error("the line was not redrawn in place")
	}

	// Quiet on a terminal: nothing.
	steps(New(s, true))
	if got := readFor(t, m, 200*time.Millisecond); got != "" {
		t.Errorf("quiet on a terminal got %q", got)
	}
}

// A transfer's counter draws its size on a terminal, counts without drawing elsewhere,
// and never fails the copy it watches.
func TestCounter(t *testing.T) {
	m, s := openPTY(t)
	c := New(s, false).Count("exporting work")
	if n, err := c.Write(make([]byte, 3<<20)); n != 3<<20 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := readFor(t, m, 300*time.Millisecond); !strings.Contains(got, "box: exporting work: 3.0 MiB (") {
		t.Errorf("terminal got %q", got)
	}
	off := New(&strings.Builder{}, false).Count("x")
	off.Write(make([]byte, 10))
	if off.N() != 10 {
		t.Errorf("N = %d", off.N())
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 30: "5.0 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
