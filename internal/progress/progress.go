// Package progress is box's progress line for long operations (launch, copy, snapshot,
// restore): one line on a terminal, redrawn in place with \r and cleared at the end;
// nothing at all on a pipe or a file, or when the user asked for quiet.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Line is one progress line. The zero value and a nil *Line are silent.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	drawn bool
	start time.Time
}

// New returns a line drawn on w when w is a terminal and quiet is false; otherwise every
// method writes nothing.
func New(w io.Writer, quiet bool) *Line {
	return &Line{w: w, on: !quiet && IsTerminal(w), start: time.Now()}
}

// IsTerminal reports whether w is an *os.File on a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// On reports whether the line is drawn.
func (l *Line) On() bool { return l != nil && l.on }

// Elapsed is the time since New.
func (l *Line) Elapsed() time.Duration {
	if l == nil {
		return 0
	}
	return time.Since(l.start)
}

// Step redraws the line as "box: WHAT (ELAPSED)".
func (l *Line) Step(format string, a ...any) {
	if !l.On() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "\r\033[Kbox: %s (%s)", fmt.Sprintf(format, a...), l.Elapsed().Round(100*time.Millisecond))
	l.drawn = true
}

// Done clears the line, so whatever comes next starts on a clean one. It may be called
// more than once.
func (l *Line) Done() {
	if !l.On() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}

// Counter counts the bytes written to it and redraws its line as "WHAT: SIZE" (at most
// ten times a second), for transfers: io.TeeReader(src, c), io.MultiWriter(dst, c).
type Counter struct {
	l    *Line
	what string
	n    int64
	last time.Time
}

// Count returns a Counter drawing on l; a silent l counts without drawing.
func (l *Line) Count(what string) *Counter { return &Counter{l: l, what: what} }

// Write counts p. It never fails.
func (c *Counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.l.On() && time.Since(c.last) >= 100*time.Millisecond {
		c.last = time.Now()
		c.l.Step("%s: %s", c.what, Size(c.n))
	}
	return len(p), nil
}

// N is the number of bytes counted.
func (c *Counter) N() int64 { return c.n }

// Size formats a byte count for people: 512 B, 3.4 MiB, 1.2 GiB.
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
