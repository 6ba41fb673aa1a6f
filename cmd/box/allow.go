package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

func newAllowCmd(e *env) *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:     "allow [--run ID] NAME...",
		Short:   "allow more names for a running allowlist sandbox, without restarting it",
		GroupID: groupSandbox,
		Long:    helpText("allow", "{{refusals}}", bwrap.RefusalsFile),
		Example: helpText("allow.example"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("for example: box allow --run ID github.com", "box allow needs a NAME to allow")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAllow(e, run, args)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "the run's ID, as box run printed it (default: the only allowlist sandbox running)")
	return cmd
}

func runAllow(e *env, run string, entries []string) error {
	err := bwrap.AllowRunning(e.runtimeDir(), e.dataHome(), run, entries, func(run, a, added string) {
		if added == "(already allowed)" {
			fmt.Fprintf(e.stderr, "box: run %s: %s was already allowed\n", run, a)
		} else {
			fmt.Fprintf(e.stderr, "box: run %s: allowed %s\n", run, added)
		}
	})
	var many *bwrap.ManyRunsError
	switch {
	case errors.Is(err, bwrap.ErrNoAllowlistRun):
		return withHint(err, "start one with: box run --network allowlist --allow NAME")
	case errors.As(err, &many):
		return usagef("name one with --run ID", "%s: %s", many, strings.Join(many.IDs, ", "))
	case errors.As(err, new(*bwrap.BadRunIDError)):
		return usagef("the ID box run printed, 8 hex digits", "--run %s", err)
	case errors.As(err, new(*bwrap.AllowLiveError)):
		return withHint(err, "is the sandbox still running? box run prints its ID when it starts")
	case err != nil:
		return usagef("a host name, *.DOMAIN or @LIST ("+strings.Join(policy.ListNames(), ", ")+"), optionally :PORT", "%s", err)
	}
	return nil
}
