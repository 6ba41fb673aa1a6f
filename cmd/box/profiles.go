package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

func newProfilesCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "profiles",
		Short:   "list profiles and where each comes from",
		GroupID: groupModel,
		Long: `List profiles: how a box is run (backend, template, network tier, extra env
names, mounts, tools, command, auth passthrough, vm resources).

Built-in profiles ship in box; user profiles in $XDG_CONFIG_HOME/box/profiles/NAME.toml
add to them, or replace a built-in of the same name.`,
		Example: "  box profiles",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := profiles.List(profiles.Dir(e.configHome()))
			if err != nil {
				return withHint(err, "fix or remove the profile file named above")
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tBACKEND\tNETWORK\tTEMPLATE\tSOURCE\tDESCRIPTION")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Backend, p.Network, p.Template, p.Source, p.Description)
			}
			return tw.Flush()
		},
	}
}
