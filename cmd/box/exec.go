package main

import (
	"errors"
	"slices"

	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newExecCmd(e *env) *cobra.Command {
	var l launchFlags
	var tty bool
	var hostPorts []string
	cmd := vmVerb(e, "exec [flags] BOX -- COMMAND [ARG...]", "run a command in a box as its user; its exit code is box's",
		func(cmd *cobra.Command, args []string) error {
			args, err := flagsAfterBox(cmd, args)
			if err != nil {
				return err
			}
			if _, _, ok := splitDash(cmd, args, false); !ok {
				return usagef("run 'box exec --help' for usage", "exec takes a box and a command: box exec BOX -- COMMAND [ARG...]")
			}
			return nil
		},
		func(cmd *cobra.Command, args []string) error {
			args, _ = flagsAfterBox(cmd, args)
			box, rest, _ := splitDash(cmd, args, false)
			return onBox(e, box, func(be backend.Backend) (err error) {
				req := l.req()
				if _, req.HostPorts, err = portFlags(nil, hostPorts); err != nil {
					return err
				}
				req.TTY = tty
				var set *backend.SettingsError // the vm backend's refusal of -t
				if err = be.Exec(box, rest, req); errors.As(err, &set) && slices.Contains(set.Settings, "tty") {
					return usagef("use 'box shell "+box+"' for a terminal in a vm box", "box exec -t: %s is a vm box; -t is for bwrap boxes", box)
				}
				return err
			})
		})
	l.register(cmd)
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "give the command a terminal of its own (bwrap boxes)")
	cmd.Flags().StringArrayVar(&hostPorts, "host-port", nil, hostPortUsage)
	cmd.Flags().SetInterspersed(false)
	return cmd
}
