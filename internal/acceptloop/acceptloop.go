// Package acceptloop is the back-off of box's accept loops (the allowlist proxy, the
// port forwarder, the ssh-agent filter): an accept that fails for want of descriptors
// or kernel memory waits, as net/http's server does, instead of spinning a CPU outside
// the sandbox's limits; only connections closing give those back.
package acceptloop

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Exhausted reports whether accept failed for want of descriptors (EMFILE, ENFILE) or
// kernel memory (ENOBUFS, ENOMEM).
func Exhausted(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) ||
		errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.ENOMEM)
}

// Backoff is the wait after each exhausted accept in a row: 5 ms, doubled each time,
// at most a second; Reset after an accept that worked.
type Backoff struct{ delay time.Duration }

// Next is the wait after one more exhausted accept.
func (b *Backoff) Next() time.Duration {
	b.delay = min(max(2*b.delay, 5*time.Millisecond), time.Second)
	return b.delay
}

// Reset starts over after an accept that worked.
func (b *Backoff) Reset() { b.delay = 0 }

// First reports whether no exhausted accept came since the last Reset (a loop records
// the first of a run only).
func (b *Backoff) First() bool { return b.delay == 0 }
