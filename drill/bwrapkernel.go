package drill

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/pty"
	"golang.org/x/sys/unix"
)

// bwrapKernelSetup is what the drill's kernel rows need from outside the sandbox.
type bwrapKernelSetup struct {
	in  Kernel
	tty *bwrapTTY
}

// bwrapTTY is a pseudo-terminal the probe runner gets as stderr: the terminal row
// changes its modes inside, and the drill checks box put them back.
type bwrapTTY struct {
	master, slave *os.File
	before        unix.Termios
	drained       sync.WaitGroup
	// seen is what reached the terminal (the strings row looks for its sequences in it),
	// bounded: past seenMax only the output is passed on.
	seen bytes.Buffer
}

// seenMax bounds what the drill keeps of its terminal's output.
const seenMax = 1 << 20

// Write keeps what the terminal received, up to seenMax.
func (t *bwrapTTY) Write(b []byte) (int, error) {
	if room := seenMax - t.seen.Len(); room > 0 {
		t.seen.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// changed reports whether the terminal's modes differ from before the launch, and ends
// the terminal (its output has been copied to the drill's stderr).
func (t *bwrapTTY) changed() (changed, exclusive bool) {
	if t == nil {
		return false, false
	}
	now, err := unix.IoctlGetTermios(int(t.slave.Fd()), unix.TCGETS)
	excl, xerr := unix.IoctlGetInt(int(t.slave.Fd()), unix.TIOCGEXCL)
	t.slave.Close()
	t.drained.Wait()
	t.master.Close()
	exclusive = xerr != nil || excl != 0 // a new pty is not exclusive
	return err != nil || *now != t.before || exclusive, exclusive
}

// bwrapKernel leaks an fd on the operator's home (not close-on-exec, as a leaky
// launcher would: box must not pass it on), names the filter groups the profile turned
// off, and opens the terminal row's pseudo-terminal. release undoes it.
func bwrapKernel(p *bwrap.Plan, stderr io.Writer) (bwrapKernelSetup, func(), error) {
	var k bwrapKernelSetup
	var undo []func()
	release := func() {
		for _, f := range undo {
			f()
		}
	}
	low, err := unix.Open(p.Spec.Home, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return k, release, fmt.Errorf("drill: opening %s for the inherited-fd probe: %w", p.Spec.Home, err)
	}
	// Above the fds box places for bwrap (3-5), which would replace it in the child.
	fd, err := unix.FcntlInt(uintptr(low), unix.F_DUPFD, 100)
	unix.Close(low)
	if err != nil {
		return k, release, fmt.Errorf("drill: inherited-fd probe: %w", err)
	}
	undo = append(undo, func() { unix.Close(fd) })
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		release()
		return k, func() {}, err
	}
	k.in.LeakedFD, k.in.LeakedDev, k.in.LeakedIno = fd, st.Dev, st.Ino
	if p.Spec.Seccomp != nil {
		k.in.OptedOut = p.Spec.Seccomp.OptIn
	}
	// A SysV segment of the operator's holding a marker, kept attached until release (a
	// segment marked for removal lives while attached, and Linux lets others attach it).
	k.in.ShmID = -1
	if id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600); err == nil {
		if b, err := unix.SysvShmAttach(id, 0, 0); err == nil {
			marker := fmt.Sprintf("box-drill-shm-%d-%d", os.Getpid(), id)
			copy(b, marker)
			_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			k.in.ShmID, k.in.ShmMarker = id, marker
			undo = append(undo, func() { _ = unix.SysvShmDetach(b) })
		} else {
			_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		}
	}
	k.in.OwnPID = os.Getpid()
	k.in.OwnStart = StartTime(strconv.Itoa(k.in.OwnPID))
	k.in.Watch = WatchTargets(p.Spec.Home)
	if m, s, err := pty.Open(); err == nil {
		t := &bwrapTTY{master: m, slave: s}
		if b, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS); err == nil {
			t.before = *b
			t.drained.Add(1)
			out := passOn(stderr)
			go func() {
				defer t.drained.Done()
				// Until the slave closes (EIO): the runner's own stderr, passed on.
				_, _ = io.Copy(io.MultiWriter(out, t), m)
				out.Flush()
			}()
			k.tty, k.in.Terminal = t, true
			var st unix.Stat_t
			if unix.Fstat(int(s.Fd()), &st) == nil {
				k.in.TerminalDev = st.Rdev
			}
			undo = append(undo, func() { s.Close(); m.Close() })
		} else {
			m.Close()
			s.Close()
		}
	}
	return k, release, nil
}
