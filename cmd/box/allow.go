package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/inet"
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
	// Every entry is checked before anything changes.
	for _, a := range entries {
		if _, err := policy.ParseAllow([]string{a}); err != nil {
			return usagef("a host name, *.DOMAIN or @LIST ("+strings.Join(policy.ListNames(), ", ")+"), optionally :PORT", "%s", err)
		}
	}
	if run == "" {
		ids := bwrap.RunningAllowlists(e.runtimeDir(), e.dataHome())
		switch len(ids) {
		case 0:
			return withHint(errors.New("no allowlist sandbox is running"), "start one with: box run --network allowlist --allow NAME")
		case 1:
			run = ids[0]
		default:
			return usagef("name one with --run ID", "%d allowlist sandboxes are running: %s", len(ids), strings.Join(ids, ", "))
		}
	} else if !bwrap.ValidRunID(run) {
		return usagef("the ID box run printed, 8 hex digits", "--run %q: not a run ID", run)
	}
	sock := bwrap.ControlSocket(e.runtimeDir(), e.dataHome(), run)
	for _, a := range entries {
		added, err := inet.AllowLive(sock, a)
		if err != nil {
			return withHint(fmt.Errorf("run %s: allow %s: %w", run, a, err), "is the sandbox still running? box run prints its ID when it starts")
		}
		if added == "(already allowed)" {
			fmt.Fprintf(e.stderr, "box: run %s: %s was already allowed\n", run, a)
		} else {
			fmt.Fprintf(e.stderr, "box: run %s: allowed %s\n", run, added)
		}
	}
	return nil
}
