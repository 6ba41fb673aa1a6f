package main

import (
	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

func newTmuxCmd(e *env) *cobra.Command {
	cmd := vmVerb(e, "tmux BOX [SESSION]", "attach to a tmux session in a box, or create it (as its user)",
		func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("run 'box tmux --help' for usage", "tmux takes a box and an optional session name, got %d argument(s)", len(args))
			}
			_, err := vm.TmuxSession(args[0], args[1:])
			return err
		},
		func(cmd *cobra.Command, args []string) error {
			session, _ := vm.TmuxSession(args[0], args[1:])
			return e.vmBackend().Tmux(args[0], session)
		})
	cmd.Long = helpText("tmux", "{{session}}", vm.DefaultTmuxSession)
	return cmd
}
