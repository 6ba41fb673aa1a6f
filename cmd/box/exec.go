package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

func newExecCmd(e *env) *cobra.Command {
	var l launchFlags
	cmd := &cobra.Command{
		Use:     "exec BOX -- COMMAND [ARG...]",
		Short:   "run a command in a box as its user; its exit code is box's",
		GroupID: groupVM,
		Long: `Run a command in a running box as the box's user (user.box.user, stamped at mint;
"claude" for a box minted by claudebox), in the user's home directory, without a
terminal: stdin, stdout and stderr are passed through, and box exits with the command's
own exit code. Arguments reach the command as they are, never through a shell.

box never reads the template again: the user comes off the instance, so clones and
boxes whose template is gone work the same. Exit code 125 (with a message) means the
user does not exist in the box. For a command as root, use 'box incus BOX -- exec {} -- CMD'.

A bwrap box: the command runs in its sandbox, in its working directory, with its own
home at $HOME and exactly box run's isolation (environment allowlist and audit: -y
skips the question, without a terminal and without -y box refuses; as root only with
--allow-root). Flags go before BOX: box exec -y BOX -- CMD.`,
		Example: `  box exec work -- git -C ~/src/app status
  box exec work -- sh -c 'cd ~/src/app && make test'
  tar -cz . | box exec work -- tar -xz -C /tmp/upload`,
		Args: func(cmd *cobra.Command, args []string) error {
			if _, _, ok := splitDash(cmd, args, false); !ok {
				return usagef("run 'box exec --help' for usage", "exec takes a box and a command: box exec BOX -- COMMAND [ARG...]")
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			box, rest, _ := splitDash(cmd, args, false)
			be, err := backendFor(e, box)
			if err != nil {
				return err
			}
			return be.Exec(box, rest, l.req())
		},
	}
	l.register(cmd)
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// Exec is box exec for a vm box: the command as the box's user, its exit code box's.
func (v vmBackend) Exec(name string, command []string, l backend.LaunchRequest) error {
	if err := refuseVM(l); err != nil {
		return err
	}
	e := v.e
	ctx := context.Background()
	c := e.client()
	defer c.Close()
	inst, err := runningBox(ctx, e, c, name)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	fwd := make(chan syscall.Signal, 4)
	go func() {
		for s := range sigs {
			fwd <- s.(syscall.Signal)
		}
	}()
	code, err := c.Exec(ctx, name, incus.Exec{
		Command: vm.EntryCommand(incus.UserOf(*inst), false, command),
		Stdin:   e.stdin, Stdout: e.stdout, Stderr: e.stderr,
		Signal: fwd,
	})
	return execResult(e, code, err)
}

// execResult maps an exec's outcome to box's: the command's own exit code. Incus
// reports exit code 127 as an error ("Command not found"): the entry shell ran, the
// command did not, and the shell said so on stderr; 127 is passed on like any code.
func execResult(e *env, code int, err error) error {
	if err != nil && code != 127 {
		return vmErr(e, err)
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// runningBox resolves a box that must be running to be entered.
func runningBox(ctx context.Context, e *env, c *incus.Client, name string) (*incus.Instance, error) {
	inst, err := resolve(ctx, e, c, name)
	if err != nil {
		return nil, err
	}
	if !inst.Running() {
		return nil, withHint(fmt.Errorf("box %q is %s", name, lower(inst.Status)), "start it: box start "+name)
	}
	return inst, nil
}
