package bwrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// SessionSubcommand is the hidden box subcommand that starts the sandboxed command
// (SessionMain); SessionPath is where box's own binary is bound, read-only, for it
// (named box: a binary that dispatches on its name, as the CLI's test binary does, still
// knows itself).
const (
	SessionSubcommand = "__session"
	SessionPath       = "/run/box/box"
)

// withSession makes the sandbox's command start through box's session helper: the
// binary self bound read-only at SessionPath, and the command after "--" prefixed with
// it. bwrap's --new-session makes the sandbox's pid 1 the session leader, so the command
// is neither a session nor a process group leader: it could not take a terminal of its
// own, and a signal could reach it but not its children.
func withSession(args []string, self string) []string {
	i := slices.Index(args, "--")
	if i < 0 || self == "" {
		return args
	}
	// The bind goes before the root is made read-only (bwrap creates its mount point).
	b := i
	for j := 0; j+1 < i; j++ {
		if args[j] == "--remount-ro" && args[j+1] == "/" {
			b = j
		}
	}
	out := make([]string, 0, len(args)+6)
	out = append(out, args[:b]...)
	out = append(out, "--ro-bind", self, SessionPath)
	out = append(out, args[b:i]...)
	out = append(out, "--", SessionPath, SessionSubcommand, "--")
	return append(out, args[i+1:]...)
}

// SessionMain runs inside the sandbox, as the command's first process: it starts a
// session and process group of its own (so Ctrl-C from the sandbox's terminal, or a
// signal box passes on, reaches the command's children too), takes the first terminal
// on stdio as its controlling terminal (the one box allocated and relays: job control
// works), and runs the command there as a job (runJob); without a terminal it becomes
// the command. Exit codes as env's: 127 not found, 126 not
// executable, 125 the helper itself failed.
func SessionMain(args []string) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "box: error: usage: box "+SessionSubcommand+" -- COMMAND [ARG...]")
		return 125
	}
	argv := args[1:]
	if _, err := unix.Setsid(); err != nil {
		fmt.Fprintf(os.Stderr, "box: error: a session for the command: %v\n", err)
		return 125
	}
	ctty := -1
	for fd := 0; fd < 3; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
			continue
		}
		// Without a relay this would be the host's terminal, which is its own session's
		// terminal already: TIOCSCTTY refuses to steal it (arg 0, no CAP_SYS_ADMIN).
		if unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0) == nil {
			ctty = fd
		}
		break
	}
	path, err := exec.LookPath(argv[0])
	if errors.Is(err, exec.ErrDot) {
		err = nil // execvp's own search, as bwrap's was
	}
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			fmt.Fprintf(os.Stderr, "box: error: %s: permission denied\n", argv[0])
			return 126
		}
		fmt.Fprintf(os.Stderr, "box: error: %s: command not found\n", argv[0])
		return 127
	}
	if ctty >= 0 {
		return runJob(path, argv, ctty)
	}
	err = unix.Exec(path, argv, os.Environ())
	return execFailed(argv[0], err)
}

func execFailed(name string, err error) int {
	fmt.Fprintf(os.Stderr, "box: error: %s: %v\n", name, err)
	if errors.Is(err, unix.ENOENT) {
		return 127
	}
	return 126
}

// jobSignals are the signals the session passes on to the command's group: those box
// forwards to the sandboxed command (run.go's forwarded) and SIGCONT, which box sends
// after an ending one so that a stopped command receives it.
var jobSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGCONT}

// runJob runs the command on the sandbox's terminal as a shell runs a job: in a process
// group of its own, in the terminal's foreground, with the session (this process) as its
// parent, and returns its code (128+N when signal N ended it). A group whose parent is
// outside the session is orphaned, and the kernel drops the stop signals of an orphaned
// group: Ctrl-Z and a program's own suspend (vim's, an agent's) did nothing (field review,
// session 16). Now the command stops, and box, seeing its job stopped, stops too and
// hands the host's terminal back to the operator's shell (relay.suspend).
func runJob(path string, argv []string, ctty int) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, jobSignals...)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: ctty}})
	if err != nil {
		return execFailed(argv[0], err)
	}
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
		done <- ws
	}()
	for {
		select {
		case s := <-sigs:
			_ = syscall.Kill(-pid, s.(syscall.Signal))
		case ws := <-done:
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}
