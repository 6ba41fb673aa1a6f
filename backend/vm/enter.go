package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/term"
)

// Enter is box shell for a vm box: the user's login shell on your terminal.
func (b Backend) Enter(name string, l backend.LaunchRequest) error {
	if err := refuseLaunch(name, l); err != nil {
		return err
	}
	return b.onTerminal("shell", name, nil)
}

// refuseLaunch: the launch flags mean nothing to a vm box (no host environment enters
// it, and box never runs it as the host's root); refused rather than ignored.
func refuseLaunch(name string, l backend.LaunchRequest) error {
	if l.TTY { // box shell is a vm box's terminal (the CLI words it)
		return &backend.SettingsError{Backend: profiles.BackendVM, Settings: []string{"tty"}}
	}
	if len(l.HostPorts) > 0 {
		return &errs.UsageError{Err: ErrHostPorts}
	}
	if l.Yes || l.AllowRoot || len(l.Allow) > 0 {
		// Named: with incusd stopped, a mistyped name lands here too (field review,
		// session 18: the refusal read as if the box were a vm one).
		return errs.Usage("drop -y, --allow-root and --allow for a vm box; for a bwrap box, check its name",
			"%s is no bwrap box here: -y, --allow-root and --allow are for bwrap boxes (a vm box gets no host environment to audit, and its network is the box bridge's)", name)
	}
	return nil
}

// ErrHostPorts: --host-port given for a vm box, which reaches no host port (a usage
// error; box expose is a vm box's door).
var ErrHostPorts = errors.New("--host-port is for bwrap boxes: a vm box reaches no host port")

// NoTerminalError: a verb that runs on a terminal (box shell, box tmux) was given none
// on stdin and stdout (a usage error).
type NoTerminalError struct{ Verb, Name string }

func (e *NoTerminalError) Error() string {
	return fmt.Sprintf("box %s needs a terminal on stdin and stdout", e.Verb)
}

// onTerminal runs cmd (nil: the user's login shell) in a box as its user, on your
// terminal, following its size.
func (b Backend) onTerminal(verb, name string, cmd []string) error {
	in, inOK := b.Stdin.(*os.File)
	out, outOK := b.Stdout.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return &errs.UsageError{Err: &NoTerminalError{Verb: verb, Name: name}}
	}
	ctx := context.Background()
	c := b.Client()
	defer c.Close()
	inst, err := b.runningBox(ctx, c, name)
	if err != nil {
		return err
	}
	w, h, err := term.GetSize(int(out.Fd()))
	if err != nil {
		w, h = 80, 24
	}
	env := map[string]string{"TERM": "xterm-256color"}
	if t := b.Getenv("TERM"); t != "" && !strings.ContainsAny(t, "\x00\n") {
		env["TERM"] = t
	}
	if t := b.Getenv("COLORTERM"); t != "" {
		env["COLORTERM"] = t
	}

	resize := make(chan incus.WindowSize, 1)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			if w, h, err := term.GetSize(int(out.Fd())); err == nil {
				select { // keep only the latest size pending
				case <-resize:
				default:
				}
				resize <- incus.WindowSize{Width: w, Height: h}
			}
		}
	}()

	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return errors.New("box " + verb + ": cannot put the terminal in raw mode: " + err.Error())
	}
	code, err := c.Exec(ctx, name, incus.Exec{
		Command:  EntryCommand(incus.UserOf(*inst), cmd == nil, cmd),
		Env:      env,
		Terminal: true,
		Size:     incus.WindowSize{Width: w, Height: h},
		Stdin:    in, Stdout: terminalOut(out),
		Resize: resize,
	})
	_ = term.Restore(int(in.Fd()), old)
	return b.execResult(code, err)
}
