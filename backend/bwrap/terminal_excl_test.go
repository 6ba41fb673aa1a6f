package bwrap_test

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

// TIOCEXCL inside, on a real terminal, as the unprivileged user: exclusive mode is not a
// termios mode, and it outlived the sandbox, so every later open of the operator's
// terminal (sudo's and ssh's prompts, pinentry, less reading /dev/tty) failed with EBUSY.
// After box it is off again and the user can open the terminal; with the terminal
// protection off it stays on and the open fails (the test can fail).
func TestKernelTerminalExclusiveReset(t *testing.T) {
	perl := testenv.RequireTool(t, "perl") // Debian's perl-base is essential
	w := newWorld(t)
	run := func() (excl int, open string) {
		master, slave := openPTY(t)
		defer master.Close()
		defer slave.Close()
		go func() {
			b := make([]byte, 4096)
			for {
				if _, err := master.Read(b); err != nil {
					return
				}
			}
		}()
		unix.Fchown(int(slave.Fd()), w.uid, w.gid)
		c := w.cmd("run", "-y", "--", perl, "-e", `ioctl(STDIN, 0x540c, 0) or die "TIOCEXCL: $!\n"; print "set\n"`)
		c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
		c.SysProcAttr.Setsid, c.SysProcAttr.Setctty = true, true
		// The filter's tty group refuses TIOCEXCL (perl dies, box exits 1); the switch
		// below turns that off too, and then the ioctl succeeds: either way the terminal
		// must be usable after box unless the protection is off.
		if err := c.Run(); err != nil {
			if _, exited := err.(*exec.ExitError); !exited {
				t.Fatalf("box: %v", err)
			}
		}
		excl, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCGEXCL)
		if err != nil {
			t.Fatal(err)
		}
		// Opened as the user (root's CAP_SYS_ADMIN ignores exclusive mode).
		o := exec.Command("sh", "-c", `exec 3<>"$0" && echo opened`, slave.Name())
		o.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
		out, _ := o.CombinedOutput()
		return excl, string(out)
	}
	if excl, open := run(); excl != 0 || !strings.Contains(open, "opened") {
		t.Errorf("after box: exclusive %d, the user's open: %q", excl, open)
	}
	// Every layer: the relay keeps the host terminal out, the terminal reset clears the
	// flag, and the filter's tty group refuses TIOCEXCL itself.
	w.withProtectionOff(t, "tty,terminal,seccomp")
	if excl, open := run(); excl == 0 || strings.Contains(open, "opened") {
		t.Errorf("with the terminal protection off, exclusive mode is off anyway (the test proves nothing): %d %q", excl, open)
	}
}

// tcflow(TCOOFF) inside, on a real terminal: suspended output outlived the sandbox, and
// the next write to the terminal (the shell's prompt) hung. The master side in packet
// mode reports each stop and start, so the test reads, once box has exited, whether the
// last word was a stop; with the terminal protection off it is (the test can fail).
func TestKernelTerminalOutputResumed(t *testing.T) {
	perl := testenv.RequireTool(t, "perl")
	w := newWorld(t)
	stoppedAfter := func() bool {
		master, slave := openPTY(t)
		defer master.Close()
		defer slave.Close()
		if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCPKT, 1); err != nil {
			t.Fatal(err)
		}
		last := make(chan byte, 1)
		c := w.cmd("run", "-y", "--", perl, "-e", `ioctl(STDIN, 0x540a, 0) or die "TCXONC: $!\n"`)
		c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
		c.SysProcAttr.Setsid, c.SysProcAttr.Setctty = true, true
		// Read the master until box has exited and nothing is left: the last flow
		// packet (TIOCPKT_STOP or _START) says whether output is suspended.
		go func() {
			var flow byte
			b := make([]byte, 4096)
			for {
				n, err := master.Read(b)
				if err != nil {
					last <- flow
					return
				}
				if n > 0 && b[0]&(unix.TIOCPKT_STOP|unix.TIOCPKT_START) != 0 {
					flow = b[0] & (unix.TIOCPKT_STOP | unix.TIOCPKT_START)
				}
			}
		}()
		if err := c.Run(); err != nil {
			t.Fatalf("box: %v", err)
		}
		slave.Close() // the last writer: the master's read ends once it has read all
		return <-last&unix.TIOCPKT_STOP != 0
	}
	if stoppedAfter() {
		t.Error("after box the terminal's output is still suspended")
	}
	// Every layer: the relay keeps the host terminal out, the terminal reset clears the
	// flag, and the filter's tty group refuses TIOCEXCL itself.
	w.withProtectionOff(t, "tty,terminal,seccomp")
	if !stoppedAfter() {
		t.Error("with the terminal protection off the output is resumed anyway (the test proves nothing)")
	}
}
