package main

import (
	"context"

	"github.com/heavy-duty/box/host"
	"github.com/spf13/cobra"
)

func newRevokeCmd(e *env) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:     "revoke USER [--purge]",
		Short:   "take a user's restricted tier back (--purge: and their boxes and project)",
		GroupID: groupHost,
		Long:    helpText("revoke"),
		Example: helpText("revoke.example"),
		Args:    boxArgs(1, "one user"),
		PreRunE: e.refuseRemoteArgs,
		RunE: onLocalHost(e, func(ctx context.Context, g host.GrantHost, args []string) error {
			return g.Revoke(ctx, args[0], purge)
		}),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also delete the user's boxes, snapshots, volumes and project")
	return cmd
}
