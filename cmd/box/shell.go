package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newShellCmd(e *env) *cobra.Command {
	var l launchFlags
	cmd := &cobra.Command{
		Use:     "shell BOX",
		Short:   "open a login shell in a box as its user",
		GroupID: groupVM,
		Long: `Open the login shell of the box's user (user.box.user, stamped at mint; "claude"
for a box minted by claudebox) on a terminal, in the user's home directory. The
terminal follows your window's size. box exits with the shell's exit code.

box never reads the template again: the user comes off the instance, so a clone lands
in the same user as its source. For a root shell: box incus BOX -- exec {} -- bash -l

A bwrap box: a login shell (bash, else sh) in its sandbox, in its working directory,
with its own home at $HOME and exactly box run's isolation (environment allowlist and
audit: -y skips the question; as root only with --allow-root).`,
		Example: `  box shell work
  box shell feature        # a clone: the same user as the box it came from`,
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := backendFor(e, args[0])
			if err != nil {
				return err
			}
			return be.Enter(args[0], l.req())
		},
	}
	l.register(cmd)
	return cmd
}

// Enter is box shell for a vm box: the user's login shell on your terminal.
func (v vmBackend) Enter(name string, l backend.LaunchRequest) error {
	if err := refuseVM(l); err != nil {
		return err
	}
	return runOnTerminal(v.e, "shell", name, nil)
}

// runOnTerminal runs cmd (nil: the user's login shell) in a box as its user, on your
// terminal, following its size.
func runOnTerminal(e *env, verb, name string, cmd []string) error {
	in, inOK := e.stdin.(*os.File)
	out, outOK := e.stdout.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return usagef("for a command without a terminal: box exec "+name+" -- COMMAND", "box %s needs a terminal on stdin and stdout", verb)
	}
	ctx := context.Background()
	c := e.client()
	defer c.Close()
	inst, err := runningBox(ctx, e, c, name)
	if err != nil {
		return err
	}
	w, h, err := term.GetSize(int(out.Fd()))
	if err != nil {
		w, h = 80, 24
	}
	env := map[string]string{"TERM": "xterm-256color"}
	if t := e.getenv("TERM"); t != "" && !strings.ContainsAny(t, "\x00\n") {
		env["TERM"] = t
	}
	if t := e.getenv("COLORTERM"); t != "" {
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
		Command:  vm.EntryCommand(incus.UserOf(*inst), cmd == nil, cmd),
		Env:      env,
		Terminal: true,
		Size:     incus.WindowSize{Width: w, Height: h},
		Stdin:    in, Stdout: out,
		Resize: resize,
	})
	_ = term.Restore(int(in.Fd()), old)
	return execResult(e, code, err)
}

func lower(s string) string { return strings.ToLower(s) }
