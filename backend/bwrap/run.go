package bwrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The exec layer passes two pipes to bwrap: ExtraFiles[0] and [1] become these fds.
const (
	InfoFD  = 3
	BlockFD = 4
)

// Launch is one bwrap run. Args must have been built with Spec.InfoFD = InfoFD and, when
// BeforeRelease is set, Spec.BlockFD = BlockFD.
type Launch struct {
	Bwrap  string   // path of the bwrap binary
	Args   []string // from Args
	Env    []string // the sandbox's whole environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// BeforeRelease runs once the sandbox's namespaces exist and before its command
	// starts; the internet tier attaches networking here. If it fails, bwrap is killed
	// and the command never runs (closing the block fd would release it unfiltered).
	BeforeRelease func(childPid int) (cleanup func(), err error)
}

// forwarded are the signals box passes on to the sandboxed command. bwrap forwards
// none, and the sandbox's pid 1 ignores signals from outside, so box signals the
// command itself.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// Run starts bwrap, forwards signals to the command, and returns the command's exit
// code (128+N when it died of signal N). err is set only when the sandbox could not run.
func Run(l Launch) (int, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	defer infoR.Close()
	files := []*os.File{infoW}
	var blockW *os.File
	if l.BeforeRelease != nil {
		blockR, w, err := os.Pipe()
		if err != nil {
			infoW.Close()
			return 1, err
		}
		defer blockR.Close()
		blockW = w
		defer func() {
			if blockW != nil {
				blockW.Close()
			}
		}()
		files = append(files, blockR)
	}

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	cmd := exec.Command(l.Bwrap, l.Args...)
	cmd.Env = l.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = l.Stdin, l.Stdout, l.Stderr
	cmd.ExtraFiles = files
	// Its own process group: a terminal's Ctrl-C reaches box, which passes it to the
	// command, instead of killing bwrap (and with it, the sandbox) outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		infoW.Close()
		return 1, fmt.Errorf("start %s: %w", l.Bwrap, err)
	}
	infoW.Close()
	for _, f := range files[1:] {
		f.Close()
	}

	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()

	child, infoErr := readChildPid(infoR)
	var cleanup func()
	if infoErr == nil && l.BeforeRelease != nil {
		cleanup, infoErr = l.BeforeRelease(child)
		if infoErr == nil {
			_, infoErr = blockW.Write([]byte{1})
		}
		if infoErr != nil {
			// Fail closed: kill bwrap before the block fd is closed by the defer.
			_ = cmd.Process.Kill()
			<-done
			return 1, infoErr
		}
		blockW.Close()
		blockW = nil
	}
	if cleanup != nil {
		defer cleanup()
	}

	var target commandPid
	if infoErr == nil {
		target.init = child
	}
	for {
		select {
		case s := <-sigs:
			target.signal(s.(syscall.Signal))
		case <-done:
			return exitCode(cmd.ProcessState, waitErr)
		}
	}
}

// readChildPid reads bwrap's --info-fd JSON for the sandbox's pid 1 (seen from outside).
func readChildPid(r io.Reader) (int, error) {
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0, fmt.Errorf("bwrap did not report the sandbox pid: %w", err)
	}
	if info.ChildPid <= 0 {
		return 0, errors.New("bwrap reported no sandbox pid")
	}
	return info.ChildPid, nil
}

// commandPid finds the sandboxed command: the child of the sandbox's pid 1.
type commandPid struct {
	once sync.Once
	init int
	pid  int
}

func (c *commandPid) lookup() {
	if c.init == 0 {
		return
	}
	// The command may not be forked yet when a signal comes early: wait a little.
	for i := 0; i < 50 && c.pid == 0; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(c.init) + "/task/" + strconv.Itoa(c.init) + "/children")
		if err != nil {
			return
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			c.pid, _ = strconv.Atoi(f[0])
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *commandPid) signal(s syscall.Signal) {
	c.once.Do(c.lookup)
	if c.pid == 0 {
		return
	}
	// The command leads its own session (--new-session): signal its process group, as
	// a terminal would, and fall back to the process alone.
	if err := unix.Kill(-c.pid, s); err != nil {
		_ = unix.Kill(c.pid, s)
	}
}

func exitCode(ps *os.ProcessState, err error) (int, error) {
	if ps == nil {
		return 1, err
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ps.ExitCode(), nil
}
