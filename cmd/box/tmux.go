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
		Long: `Attach to the tmux session SESSION (default "` + defaultTmuxSession + `") in a box, creating it when it is
not there (tmux new-session -A), as the box's user, on your terminal. A session
outlives your connection: when the terminal goes away, what runs in it goes on, and
the same command attaches to it again. Detach with Ctrl-b d; exit ends the session.
Session names are letters, digits, '-' and '_'. The box needs tmux installed.`,
		Example: `  box tmux work            # attach or create "main"
  box tmux work run-1      # a second, independent session in the same box`,
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
