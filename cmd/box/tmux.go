package main

import (
	"github.com/heavy-duty/box/internal/charclass"
	"github.com/spf13/cobra"
)

// defaultTmuxSession is the session box tmux attaches to without a name (upstream's).
const defaultTmuxSession = "main"

var (
	sessionFirst = charclass.New("A-Za-z0-9_")
	sessionRest  = charclass.New("A-Za-z0-9_-")
)

func newTmuxCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "tmux BOX [SESSION]",
		Short:   "attach to a tmux session in a box, or create it (as its user)",
		GroupID: groupVM,
		Long:    helpText("tmux", "{{session}}", defaultTmuxSession),
		Example: helpText("tmux.example"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("run 'box tmux --help' for usage", "tmux takes a box and an optional session name, got %d argument(s)", len(args))
			}
			if len(args) == 2 && !charclass.Match(args[1], sessionFirst, sessionRest, 64) {
				return usagef("for example: box tmux "+args[0]+" run-1", "session name %q: want letters, digits, '-' and '_'", args[1])
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			session := defaultTmuxSession
			if len(args) == 2 {
				session = args[1]
			}
			return vmBackend{e: e}.vm().Tmux(args[0], session)
		},
	}
}
