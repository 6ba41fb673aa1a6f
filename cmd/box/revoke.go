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
		Long: `Take back what 'box grant USER' gave: the user's certificate leaves the trust store
(incusd refuses them from that moment: through incus-user they are an untrusted client),
its key is removed from INCUS_DIR/users/UID (the directory stays: without it incus-user
would set the user up again, on its own loose defaults) and they leave the socket's
group. Their boxes and project stay, stopped or running, and a new 'box grant' gives
them back.

--purge also deletes the project and everything in it: every box (with its snapshots),
their images, profiles and custom volumes. The access goes first whatever the project
holds; then the purge deletes nothing of the project when it holds what box does not
delete: an instance box did not mint (the tag boundary), or a storage bucket.`,
		Example: `  sudo box revoke alice
  sudo box revoke alice --purge     # and delete alice's boxes and project`,
		Args:    boxArgs(1, "one user"),
		PreRunE: e.refuseRemoteArgs,
		RunE: onLocalHost(e, func(ctx context.Context, g host.GrantHost, args []string) error {
			return g.Revoke(ctx, args[0], purge)
		}),
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also delete the user's boxes, snapshots, volumes and project")
	return cmd
}
