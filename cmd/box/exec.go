package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newExecCmd(e *env) *cobra.Command {
	var l launchFlags
	var tty bool
	var hostPorts []string
	cmd := &cobra.Command{
		Use:     "exec [flags] BOX -- COMMAND [ARG...]",
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
--allow-root). Flags go before BOX, or between BOX and --: box exec work -y -- CMD.
With -t and a terminal on stdin, the command gets a terminal of its own that box relays
(job control, Ctrl-C to it, the window size followed; your terminal is never passed in);
without -t a terminal on stdio reaches it as a pipe. -t is for bwrap boxes; in a vm box
use box shell. --host-port 5432 lets this session reach the host's 127.0.0.1:5432 as
host.box.internal:5432, beside the profile's host_ports (bwrap boxes; refused for a vm
box, whose ports box expose opens; box expose opens a bwrap box's ports too).`,
		Example: `  box exec work -- git -C ~/src/app status
  box exec work -- sh -c 'cd ~/src/app && make test'
  tar -cz . | box exec work -- tar -xz -C /tmp/upload
  box exec -t work -- htop`,
		Args: func(cmd *cobra.Command, args []string) error {
			args, err := flagsAfterBox(cmd, args)
			if err != nil {
				return err
			}
			if _, _, ok := splitDash(cmd, args, false); !ok {
				return usagef("run 'box exec --help' for usage", "exec takes a box and a command: box exec BOX -- COMMAND [ARG...]")
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			args, _ = flagsAfterBox(cmd, args)
			box, rest, _ := splitDash(cmd, args, false)
			be, err := backendFor(e, box)
			if err != nil {
				return err
			}
			req := l.req()
			if _, req.HostPorts, err = portFlags(nil, hostPorts); err != nil {
				return err
			}
			if req.TTY = tty; tty {
				if _, vm := be.(vmBackend); vm {
					return usagef("use 'box shell "+box+"' for a terminal in a vm box", "box exec -t: %s is a vm box; -t is for bwrap boxes", box)
				}
			}
			return be.Exec(box, rest, req)
		},
	}
	l.register(cmd)
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "give the command a terminal of its own (bwrap boxes)")
	cmd.Flags().StringArrayVar(&hostPorts, "host-port", nil, hostPortUsage)
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// Exec is box exec for a vm box: the command as the box's user, its exit code box's.
func (v vmBackend) Exec(name string, command []string, l backend.LaunchRequest) error {
	return v.vm().Exec(name, command, l)
}
