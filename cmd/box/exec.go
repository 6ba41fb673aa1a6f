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
		Long:    helpText("exec"),
		Example: helpText("exec.example"),
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
