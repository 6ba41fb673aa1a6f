package main

import (
	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newExecCmd(e *env) *cobra.Command {
	var l launchFlags
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
--allow-root). Flags go before BOX, or between BOX and --: box exec work -y -- CMD.`,
		Example: `  box exec work -- git -C ~/src/app status
  box exec work -- sh -c 'cd ~/src/app && make test'
  tar -cz . | box exec work -- tar -xz -C /tmp/upload`,
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
			return be.Exec(box, rest, l.req())
		},
	}
	l.register(cmd)
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// Exec is box exec for a vm box: the command as the box's user, its exit code box's.
func (v vmBackend) Exec(name string, command []string, l backend.LaunchRequest) error {
	return v.vm().Exec(name, command, l)
}
