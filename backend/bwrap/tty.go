package bwrap

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/heavy-duty/box/internal/pty"
	"github.com/heavy-duty/box/internal/ttyfilter"
	"golang.org/x/sys/unix"
)

// ProtTTY gives the sandbox a terminal of its own, relayed by box; off (a test build),
// the host's terminal is passed in as it is, as before the relay.
const ProtTTY = "tty"

// relay is the sandbox's own terminal: a pseudo-terminal box allocates when one of its
// stdio is a terminal, and relays (as ssh, incus exec and docker -t do). The sandbox
// gets only the pty's slave, as its controlling terminal (SessionMain), so nothing of
// the host's terminal device is reachable from inside: not its fd, not TIOCSTI into it,
// not its modes, its exclusive flag or its line discipline.
//
// While box is in the foreground of the host terminal, the terminal is in raw mode and
// every keystroke (Ctrl-C and Ctrl-Z included) goes to the pty, whose line discipline
// signals the sandbox's foreground job. In the background (`timeout 20 box run ...`,
// `box run ... &`), box reads nothing from the terminal (that would stop it with
// SIGTTIN) and leaves its modes alone, until a SIGCONT finds it in the foreground.
type relay struct {
	in     int      // the host terminal as box's stdin, -1 when stdin is not a terminal
	out    *os.File // where the sandbox's terminal output goes (the host terminal)
	master *os.File // in the runtime's poller: its Close and deadlines end the pumps' waits
	slave  *os.File // closed once bwrap has it

	wake    int           // an eventfd: ends the input pump
	cont    chan struct{} // box was continued (SIGCONT): check the foreground again
	stop    chan struct{} // closed when the relay ends
	inDone  chan struct{}
	outDone chan struct{}

	mu     sync.Mutex
	saved  *unix.Termios // the host's modes before raw mode; nil while not raw
	closed bool
}

// TerminalError: box could not make the sandbox's terminal. Cause says why, in words
// (its hint, the fix, is worded by the CLI); the errno stays in the chain.
type TerminalError struct {
	Cause TerminalCause
	Err   error
}

// TerminalCause is why a terminal could not be made.
type TerminalCause int

const (
	TerminalUnknown   TerminalCause = iota
	TerminalExhausted               // every pseudo-terminal is in use (kernel.pty.max, devpts max=)
	TerminalMissing                 // no /dev/ptmx or no devpts behind it
	TerminalDenied                  // /dev/ptmx or the new terminal may not be opened by this user
	TerminalBusy                    // the terminal is held in exclusive mode (TIOCEXCL)
)

func (e *TerminalError) Error() string {
	why := map[TerminalCause]string{
		TerminalExhausted: "every pseudo-terminal of this machine is in use",
		TerminalMissing:   "this machine has no pseudo-terminal device (/dev/ptmx, /dev/pts)",
		TerminalDenied:    "this user may not open a pseudo-terminal",
		TerminalBusy:      "the pseudo-terminal is busy (held in exclusive mode)",
	}[e.Cause]
	if why == "" {
		return e.Err.Error()
	}
	return why + " (" + e.Err.Error() + ")"
}

func (e *TerminalError) Unwrap() error { return e.Err }

// terminalError names the cause of a failed pty.Open.
func terminalError(err error) *TerminalError {
	c := TerminalUnknown
	switch {
	case errors.Is(err, unix.ENOSPC):
		c = TerminalExhausted
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO), errors.Is(err, unix.EIO):
		c = TerminalMissing
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		c = TerminalDenied
	case errors.Is(err, unix.EBUSY):
		c = TerminalBusy
	}
	return &TerminalError{Cause: c, Err: err}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// stdioTerminals picks, among the three stdio streams, the terminals: the relay's input
// (stdin, when it is one) and output (the first of stdout, stderr, stdin that is one).
func stdioTerminals(streams [3]any) (in, out *os.File, which [3]bool) {
	for i, s := range streams {
		f, ok := s.(*os.File)
		if !ok || f == nil || !isTerminal(f) {
			continue
		}
		which[i] = true
		if i == 0 {
			in = f
		}
	}
	for _, i := range []int{1, 2, 0} {
		if which[i] {
			out = streams[i].(*os.File)
			break
		}
	}
	return in, out, which
}

// withoutTerminals hides the terminals among streams behind plain readers and writers,
// so they reach the sandbox as pipes.
func withoutTerminals(streams [3]any) [3]any {
	_, _, which := stdioTerminals(streams)
	for i, t := range which {
		if !t {
			continue
		}
		f := streams[i].(*os.File)
		if i == 0 {
			streams[i] = struct{ io.Reader }{f}
		} else {
			streams[i] = struct{ io.Writer }{f}
		}
	}
	return streams
}

// openRelay allocates the sandbox's terminal when one of streams is a terminal (nil,
// nil otherwise), and returns the streams with each terminal replaced by the slave.
func openRelay(streams [3]any) (*relay, [3]any, error) {
	in, out, which := stdioTerminals(streams)
	if out == nil || protectionOff(ProtTTY) {
		return nil, streams, nil
	}
	m, s, err := pty.Open()
	if err != nil {
		return nil, streams, terminalError(err)
	}
	r := &relay{in: -1, out: out, master: m, slave: s, cont: make(chan struct{}, 1), stop: make(chan struct{}),
		inDone: make(chan struct{}), outDone: make(chan struct{})}
	if r.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		m.Close()
		s.Close()
		return nil, streams, err
	}
	// The sandbox's terminal starts with the host's modes (erase, kill, the special
	// characters the user knows) and size.
	host := int(out.Fd())
	if in != nil {
		r.in = int(in.Fd())
		host = r.in
	}
	if t, err := unix.IoctlGetTermios(host, unix.TCGETS); err == nil {
		if in == nil {
			// Output only: the host terminal still turns \n into \r\n itself.
			t.Oflag &^= unix.ONLCR
		}
		_ = unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, t)
	}
	r.resize()
	for i := range streams {
		if which[i] {
			streams[i] = s
		}
	}
	return r, streams, nil
}

// discard frees a relay that never started (the launch failed).
func (r *relay) discard() {
	if r == nil {
		return
	}
	r.master.Close()
	r.slave.Close()
	unix.Close(r.wake)
}

// start begins relaying; bwrap holds the slave by now, so box's copy is closed (the
// output pump ends when the sandbox's last process has closed it).
func (r *relay) start() {
	r.slave.Close()
	go r.pumpOut()
	if r.in < 0 {
		close(r.inDone)
		return
	}
	go r.pumpIn()
}

// foreground reports whether box may read and set the host terminal: it is box's
// controlling terminal with box's process group in the foreground, or it is not box's
// controlling terminal at all (no job control applies).
func (r *relay) foreground() bool {
	return ttyForeground(r.in)
}

// ttyForeground is whether box's process group is the foreground one of the terminal fd
// (also when that cannot be told: a terminal that is not box's controlling one). In the
// background the screen is another job's: a reset would turn off its modes (a vim's
// alternate screen, mouse and paste), past stty tostop.
func ttyForeground(fd int) bool {
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err != nil || pg == unix.Getpgrp()
}

// continued is called on SIGCONT: box may have been brought to the foreground.
func (r *relay) continued() {
	select {
	case r.cont <- struct{}{}:
	default:
	}
}

// resize gives the sandbox's terminal the host terminal's size; the kernel then sends
// SIGWINCH to the sandbox's foreground job.
func (r *relay) resize() {
	ws, err := unix.IoctlGetWinsize(int(r.out.Fd()), unix.TIOCGWINSZ)
	if err != nil && r.in >= 0 {
		ws, err = unix.IoctlGetWinsize(r.in, unix.TIOCGWINSZ)
	}
	if err == nil {
		_ = pty.Ioctl(r.master, func(fd int) error { return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) })
	}
}

// makeRaw puts the host terminal in raw mode (once), keeping its modes to put back.
func (r *relay) makeRaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.saved != nil || r.closed {
		return
	}
	t, err := unix.IoctlGetTermios(r.in, unix.TCGETS)
	if err != nil {
		return
	}
	saved := *t
	raw := *t
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	withoutTTOU(func() {
		if unix.IoctlSetTermios(r.in, unix.TCSETS, &raw) == nil {
			r.saved = &saved
		}
	})
}

// foregroundLook is how often box in the background looks whether it is in the
// foreground again (one ioctl).
const foregroundLook = 200 * time.Millisecond

// pumpIn copies keystrokes to the sandbox's terminal while box is in the foreground.
func (r *relay) pumpIn() {
	defer close(r.inDone)
	buf := make([]byte, 32<<10)
	fds := []unix.PollFd{{Fd: int32(r.in), Events: unix.POLLIN}, {Fd: int32(r.wake), Events: unix.POLLIN}}
	for {
		if !r.foreground() {
			// Wait to be brought to the foreground: a SIGCONT (fg of a stopped job),
			// or a look now and then, since bash's fg sends none to a job that was
			// running, as box in the background is (it reads nothing, so it never
			// stops): it waited for a SIGCONT that never came, the terminal stayed
			// cooked and nothing reached the sandbox (field review, session 16,
			// TestTTYFieldBackgroundThenFg).
			select {
			case <-r.cont:
			case <-time.After(foregroundLook):
			case <-r.stop:
				return
			}
			if r.foreground() {
				r.resize() // SIGWINCH reaches only the foreground: a resize meanwhile was missed
			}
			continue
		}
		r.makeRaw()
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents == 0 || !r.foreground() {
			continue
		}
		n, err := unix.Read(r.in, buf)
		if n > 0 {
			if _, werr := r.master.Write(buf[:n]); werr != nil {
				return
			}
		}
		if n == 0 || err != nil && err != unix.EINTR && err != unix.EAGAIN {
			return // the host terminal hung up
		}
	}
}

// pumpOut copies the sandbox's terminal output to the host terminal until the
// sandbox's last process has closed its terminal (EIO) or box hangs it up.
//
// A pty hands out at most its line discipline's 4 KiB per read, and every read and
// write costs a wakeup of box and of the kernel's flush worker. So each wake reads on
// until the pty has nothing more ready, up to outBatch, and hands that to writeOut as
// one write: a command's bulk output crosses in a few large writes, a keystroke's echo
// at once. Reading and writing are two goroutines with outBatches buffers between them,
// so the two pty hops (the sandbox's into box, box's into the host terminal) run side by
// side: one goroutine, blocked in its write while the host's reader drains it, left the
// sandbox's pty unread meanwhile, and the hops took turns (relay/direct 0.45).
func (r *relay) pumpOut() {
	defer close(r.outDone)
	rc, err := r.master.SyscallConn()
	if err != nil {
		return
	}
	full, free := make(chan []byte, outBatches), make(chan []byte, outBatches)
	for range outBatches {
		free <- make([]byte, outBatch)
	}
	written := make(chan struct{})
	go r.writeOut(full, free, written)
	defer func() {
		close(full)
		<-written
	}()
	for {
		buf := <-free
		n := 0
		var end error
		err := rc.Read(func(fd uintptr) bool {
			for n < len(buf) {
				k, err := unix.Read(int(fd), buf[n:])
				switch {
				case k > 0:
					n += k
				case err == unix.EINTR:
				case err == unix.EAGAIN:
					return n > 0 // nothing yet: wait for the poller
				default:
					end = err
					if k == 0 && err == nil {
						end = io.EOF
					}
					return true
				}
			}
			return true
		})
		if n > 0 {
			full <- buf[:n]
		} else {
			free <- buf
		}
		if err != nil || end != nil {
			return
		}
	}
}

// writeOut writes what pumpOut read to the host terminal, in order, through the OSC
// filter, and gives each buffer back; it ends when full is closed and drained.
func (r *relay) writeOut(full <-chan []byte, free chan<- []byte, done chan<- struct{}) {
	defer close(done)
	out := make([]byte, 0, outBatch)
	// internal/ttyfilter: no clipboard or file writes on the host's terminal.
	osc := ttyfilter.Filter{DenyOnly: protectionOff(ProtOSCAllow)}
	filter := !protectionOff(ProtTerminal)
	discard := false
	for b := range full {
		if !discard {
			w := b
			if filter {
				out = osc.Append(out[:0], b)
				w = out
			}
			// A host terminal that is gone: keep draining, so the sandbox never blocks.
			if _, werr := r.out.Write(w); len(w) > 0 && werr != nil {
				discard = true
			}
		}
		free <- b[:cap(b)]
	}
}

// outBatch bounds what pumpOut gathers before it hands a buffer to writeOut;
// outBatches is how many buffers there are between them.
const (
	outBatch   = 16 << 10
	outBatches = 8
)

// hangup closes the sandbox's terminal, as a closing ssh connection does: the kernel
// sends SIGHUP to its session leader and foreground job (an interactive shell ignores
// SIGTERM, not a hangup).
func (r *relay) hangup() {
	r.master.Close()
}

// close ends the relay once bwrap has exited: the sandbox's output is read to its end,
// the input pump stops, and the host terminal gets its modes back, with what it holds
// of pending input (the answers to the sandbox's DA and DSR queries, typeahead meant for
// the sandbox) flushed, so none of it reaches the shell's prompt. It is safe in the
// background: SIGTTOU is ignored meanwhile, and the flush is skipped there (the input
// belongs to the foreground job).
func (r *relay) close() {
	if r == nil {
		return
	}
	select {
	case <-r.outDone:
	case <-time.After(2 * time.Second):
		// Only the sandbox holds the slave, and it has ended: this bounds nothing
		// expected, it keeps box from hanging on the unexpected.
		r.master.SetReadDeadline(time.Now())
		<-r.outDone
	}
	close(r.stop)
	unix.Write(r.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	r.master.SetWriteDeadline(time.Now())
	<-r.inDone
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	withoutTTOU(func() {
		// The screen state the sandbox left (concealed text, the alternate screen)
		// would hide what box prints next: its audit report. Not from the background
		// (ttyForeground; field review, session 20).
		if !protectionOff(ProtTerminal) && r.foreground() {
			_, _ = r.out.Write([]byte(ttyfilter.Reset))
		}
		if r.saved != nil {
			_ = unix.IoctlSetTermios(r.in, unix.TCSETS, r.saved)
		}
		if r.in >= 0 && r.foreground() && !protectionOff(ProtTerminal) {
			_ = unix.IoctlSetInt(r.in, unix.TCFLSH, unix.TCIFLUSH)
		}
	})
	r.master.Close()
	unix.Close(r.wake)
}

// withoutTTOU runs f with SIGTTOU blocked on its thread, as shells block it around
// their own terminal restores: a process in a background process group that changes its
// terminal's modes, flushes or resumes it is otherwise stopped until someone continues
// it, which under `timeout` or a script nobody does. The kernel takes a blocked SIGTTOU
// as ignored and lets the change through; the mask is the thread's own, so nothing
// process-wide changes and nothing is inherited.
func withoutTTOU(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		f()
		return
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	f()
}
