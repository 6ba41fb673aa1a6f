package bwrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/phase"
	"golang.org/x/sys/unix"
)

// The exec layer passes bwrap its own fds at fixed numbers: ExtraFiles-style, these
// become InfoFD, BlockFD (internet tier) and SeccompFD (the filter's program).
const (
	InfoFD    = 3
	BlockFD   = 4
	SeccompFD = 5
)

// Launch is one bwrap run. Args must have been built with Spec.InfoFD = InfoFD, with
// Spec.BlockFD = BlockFD when BeforeRelease is set, and with Spec.SeccompFD = SeccompFD
// when Seccomp is.
type Launch struct {
	Bwrap  string   // path of the bwrap binary
	Args   []string // from Args
	Env    []string // the sandbox's whole environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Seccomp is the compiled filter (seccomp.Filter.Bytes) bwrap reads from SeccompFD.
	Seccomp []byte
	// BeforeRelease runs once the sandbox's namespaces exist and before its command
	// starts; the internet tier attaches networking here. If it fails, bwrap is killed
	// and the command never runs (closing the block fd would release it unfiltered).
	BeforeRelease func(childPid int) (cleanup func(), err error)
	// NixStore, when set, is a per-project store directory: box starts itself as the
	// helper that layers it over the host's store and then becomes bwrap (same pid, same
	// fds). Self is box's own binary.
	NixStore, Self string
	// ScopeAbstract: bwrap starts in a Landlock domain that scopes abstract unix
	// sockets (Spec.ScopeAbstract).
	ScopeAbstract bool
	// UnixSockets: the sandbox's unix sockets are mediated (unixsock.go).
	UnixSockets UnixSockets
	// NoTTY: no terminal for the command; terminals on stdio are bridged by pipes.
	NoTTY bool
	// Ended, when set, is called once bwrap has exited and the sandbox has ended (every
	// process of its pid namespace: sandboxEnd), before Run returns.
	Ended func()
}

// forwarded are the signals box passes on to the sandboxed command. bwrap forwards
// none, and the sandbox's pid 1 ignores signals from outside, so box signals the
// command itself.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// Run starts bwrap, forwards signals to the command, and returns the command's exit
// code (128+N when it died of signal N). err is set only when the sandbox could not run.
//
// Before the launch it marks every fd but 0-2 close-on-exec (only box's own fds reach
// bwrap), saves the modes of the terminals on stdio (restored however the sandbox
// ends), and forks bwrap from a thread that joined a fresh, empty session keyring.
//
// It uses syscall.ForkExec rather than os/exec: os/exec probes pidfd support with an
// extra fork on first use, a cost paid on every box run.
func Run(l Launch) (int, error) {
	// Streams that are not files are bridged by pipes; their ends close when bwrap has
	// exited, and box waits for the copies so no output is lost.
	var closeAfter []*os.File
	var copies sync.WaitGroup
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
		copies.Wait()
	}()
	// A terminal on stdio is never passed in: the sandbox gets one of its own (relay).
	streams := [3]any{l.Stdin, l.Stdout, l.Stderr}
	hostFds := fdsOf(streams)
	var tty *relay
	var err error
	if l.NoTTY {
		streams = withoutTerminals(streams)
	} else {
		tty, streams, err = openRelay(streams)
	}
	if err != nil {
		return 1, fmt.Errorf("a terminal for the sandbox: %w", err)
	}
	if tty != nil {
		// On a terminal the command starts through SessionMain: a session of its own
		// with the relayed pty as its controlling terminal. (Without one it is not
		// needed: its exec costs a launch about a Go binary's start.)
		l.Args = withSession(l.Args, l.Self)
	}
	ttyStarted := false
	defer func() {
		if !ttyStarted {
			tty.discard()
		}
	}()
	stdio := make([]uintptr, 3)
	for i, s := range streams {
		f, err := asFile(s, i, &copies)
		if err != nil {
			return 1, err
		}
		if f.owned {
			closeAfter = append(closeAfter, f.File)
		}
		stdio[i] = f.Fd()
	}

	infoR, infoW, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	defer infoR.Close()
	// Unused fixed slots are closed in the child (-1).
	files := append(stdio, infoW.Fd(), ^uintptr(0), ^uintptr(0))
	var blockR, blockW *os.File
	if l.BeforeRelease != nil {
		if blockR, blockW, err = os.Pipe(); err != nil {
			infoW.Close()
			return 1, err
		}
		files[BlockFD] = blockR.Fd()
		defer func() {
			if blockW != nil {
				blockW.Close()
			}
		}()
	}
	if l.Seccomp != nil {
		if protectionOff(ProtSeccomp) {
			l.Seccomp = allowAll
		}
		prog, err := programFile(l.Seccomp)
		if err != nil {
			infoW.Close()
			return 1, err
		}
		defer prog.Close()
		files[SeccompFD] = prog.Fd()
	} else {
		files = files[:SeccompFD]
	}

	terms := saveTerminals(hostFds)
	defer terms.restore()
	if err := closeInherited(); err != nil {
		infoW.Close()
		return 1, err
	}

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	if tty != nil {
		signal.Notify(sigs, syscall.SIGCONT)
	}
	defer signal.Stop(sigs)

	// Its own process group: a terminal's Ctrl-C reaches box, which passes it to the
	// command, instead of killing bwrap (and with it, the sandbox) outright.
	sys := &syscall.SysProcAttr{Setpgid: true}
	prog, argv := l.Bwrap, append([]string{l.Bwrap}, l.Args...)
	if l.NixStore != "" {
		prog, argv = l.Self, nixStoreArgv(l.Self, l.NixStore, l.Bwrap, l.Args)
		nixStoreAttr(sys)
	}
	socks := newSockGuard(l.UnixSockets)
	defer socks.stop()
	proc, err := spawn(prog, argv, &syscall.ProcAttr{Env: l.Env, Files: files, Sys: sys}, l.ScopeAbstract, socks)
	infoW.Close()
	if blockR != nil {
		blockR.Close()
	}
	if err != nil {
		return 1, fmt.Errorf("start %s: %w", l.Bwrap, err)
	}
	defer proc.close()
	phase.Mark("run:spawn")
	if tty != nil {
		ttyStarted = true
		tty.start()
		defer tty.close()
	}

	child, pidns, infoErr := readChildPid(infoR)
	if infoErr == nil {
		infoErr = socks.start(child)
	}
	// The sandbox's pid 1, held from now: bwrap exits as soon as pid 1 has reported the
	// command's code, before the rest of the sandbox has ended (sandboxEnd).
	end := holdSandbox(child, pidns)
	defer end.close()
	var cleanup func()
	if infoErr == nil && l.BeforeRelease != nil {
		// A pidfd names this very process: if setup fails and the sandbox has already
		// gone, a kill by number could hit a reused pid.
		childFd, pfErr := unix.PidfdOpen(child, 0)
		cleanup, infoErr = l.BeforeRelease(child)
		if infoErr == nil {
			_, infoErr = blockW.Write([]byte{1})
		}
		if infoErr != nil {
			// The sandbox already gone: bwrap failed setting it up (its message is on
			// the command's stderr), and what failed here only followed from that.
			if (pfErr == nil && pidfdEnded(childFd)) || errors.Is(pfErr, unix.ESRCH) {
				infoErr = &SetupEndedError{Err: infoErr}
			}
			// Fail closed: kill the sandbox and bwrap before the block fd is closed by
			// the defer (a sandbox outliving bwrap would read EOF and run unfiltered).
			if pfErr == nil {
				_ = unix.PidfdSendSignal(childFd, unix.SIGKILL, nil, 0)
			}
			proc.kill()
			<-proc.done
			if pfErr == nil {
				unix.Close(childFd)
			}
			return 1, infoErr
		}
		if pfErr == nil {
			unix.Close(childFd)
		}
		blockW.Close()
		blockW = nil
	}
	if cleanup != nil {
		defer cleanup()
	}

	var cmd *command
	if infoErr == nil {
		cmd = superviseCommand(child, proc.done)
		defer cmd.close()
		if tty != nil {
			tty.watchJob(cmd) // tty_suspend.go
		}
	}
	phase.Mark("run:release")
	var hangupLater *time.Timer
	defer func() {
		if hangupLater != nil {
			hangupLater.Stop()
		}
	}()
	for {
		select {
		case s := <-sigs:
			switch {
			case tty != nil && s == syscall.SIGWINCH:
				tty.resize() // the kernel signals the sandbox's foreground job
			case tty != nil && s == syscall.SIGCONT:
				tty.continued()
			case s == syscall.SIGCONT:
			default:
				cmd.signal(s.(syscall.Signal))
				switch {
				case tty != nil && s == syscall.SIGHUP:
					tty.hangup()
				case tty != nil && s == syscall.SIGTERM && hangupLater == nil:
					// The command's own handling of TERM (a trap's cleanup) comes
					// first: a hangup now would be taken before it (the kernel
					// delivers SIGHUP, the lower number, first) and end it with 129.
					// A command ignoring TERM (an interactive shell) is hung up after
					// termGrace.
					hangupLater = time.AfterFunc(termGrace, tty.hangup)
				}
			}
		case <-proc.done:
			end.wait()
			phase.Mark("run:sandbox")
			if l.Ended != nil {
				l.Ended()
			}
			ws := proc.status
			if code, ok := cmd.killedInitCode(); ok {
				// The sandbox's pid 1 was stopped after the command ended, and box
				// killed it: the command's own exit code is the answer.
				return code, nil
			}
			if ws.Signaled() {
				return 128 + int(ws.Signal()), nil
			}
			return ws.ExitStatus(), nil
		}
	}
}

// termGrace is how long a command on box's terminal has to end on SIGTERM before box
// hangs its terminal up.
const termGrace = 2 * time.Second

// fdsOf lists the fds of the streams that are files (the host's terminals among them).
func fdsOf(streams [3]any) []uintptr {
	var fds []uintptr
	for _, s := range streams {
		if f, ok := s.(*os.File); ok && f != nil {
			fds = append(fds, f.Fd())
		}
	}
	return fds
}

// stdFile is a stream as a file descriptor bwrap can inherit.
type stdFile struct {
	*os.File
	owned bool // a pipe box made and must close
}

// asFile passes an *os.File through (a terminal stays a terminal for the command);
// anything else is bridged with a pipe.
func asFile(s any, fd int, copies *sync.WaitGroup) (stdFile, error) {
	input := fd == 0
	if f, ok := s.(*os.File); ok && f != nil {
		switch bridge, err := stdioKind(f, fd); {
		case err != nil:
			return stdFile{}, err
		case !bridge:
			return stdFile{File: f}, nil
		}
		// A regular file is copied through a pipe: passed itself, the sandbox could open
		// /proc/self/fd/N again, for writing (box run -- cmd < ~/.bashrc).
	}
	if s == nil {
		f, err := os.Open(os.DevNull)
		return stdFile{f, true}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return stdFile{}, err
	}
	if input {
		// Not waited for: the reader may block forever on an open stdin.
		go func() { io.Copy(w, s.(io.Reader)); w.Close() }()
		return stdFile{r, true}, nil
	}
	copies.Add(1)
	go func() { io.Copy(s.(io.Writer), r); r.Close(); copies.Done() }()
	return stdFile{w, true}, nil
}

// stdioKind says how a stdio file may reach the sandbox: a terminal, pipe, socket or
// character device as it is (reopened through /proc/self/fd it is the same thing), a
// regular file or block device only through a pipe (bridge); a directory, or an O_PATH
// link, is refused: /proc/self/fd/N would be a way into the whole tree under it.
func stdioKind(f *os.File, fd int) (bridge bool, err error) {
	if protectionOff(ProtFDs) {
		return false, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, fmt.Errorf("%s: %w", stdioName(fd), err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR, unix.S_IFLNK:
		return false, errs.WithHint(fmt.Errorf("%s is a directory: the sandbox could reach every file under it through /proc/self/fd/%d", stdioName(fd), fd),
			"redirect a file or a pipe instead (for example < /dev/null)")
	case unix.S_IFREG, unix.S_IFBLK:
		return true, nil
	}
	return false, nil
}

func stdioName(fd int) string {
	return [...]string{"stdin", "stdout", "stderr"}[fd]
}

// readChildPid reads bwrap's --info-fd JSON for the sandbox's pid 1 (seen from outside)
// and its pid namespace (an inode number; 0 when bwrap did not say).
func readChildPid(r io.Reader) (int, uint64, error) {
	var info struct {
		ChildPid int    `json:"child-pid"`
		PidNS    uint64 `json:"pid-namespace"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, 0, fmt.Errorf("bwrap did not report the sandbox pid: %w", err)
	}
	if info.ChildPid <= 0 {
		return 0, 0, errors.New("bwrap reported no sandbox pid")
	}
	return info.ChildPid, info.PidNS, nil
}

// pidfdEnded: the process of the pidfd has exited (a zombie included).
func pidfdEnded(fd int) bool {
	// A sandbox bwrap failed to set up may be mid-exit: its namespaces already gone (what
	// box failed to open) but its exit not yet signalled on the pidfd (a full run, session
	// 19: "open /proc/PID/ns/net: no such file or directory"). One still blocked on the
	// block fd never ends by itself, so waiting a moment costs only box's own failures.
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, setupEndWait)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1 && pfd[0].Revents&unix.POLLIN != 0
	}
}

// setupEndWait is how long (ms) pidfdEnded waits for a sandbox that is ending.
const setupEndWait = 500
