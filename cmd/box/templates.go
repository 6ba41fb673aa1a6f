package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/heavy-duty/box/templates"
	"github.com/spf13/cobra"
)

func newTemplatesCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "templates",
		Short:   "list templates with their descriptions",
		GroupID: groupModel,
		Long: `List templates: what is in a box (image, user, resources and cloud-init for vm
boxes; tools, default command and sandbox notes for bwrap sandboxes). A template never
chooses networking.

Built-in templates ship in box; user templates are directories in
$XDG_CONFIG_HOME/box/templates/NAME/ holding template.toml or an upstream box.env.`,
		Example: "  box templates",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, err := templates.List(templates.Dir(e.configHome()))
			if err != nil {
				var h interface{ Hint() string }
				if errors.As(err, &h) {
					return err
				}
				return withHint(err, "fix or remove the template named above")
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Source, t.Description)
			}
			return tw.Flush()
		},
	}
}
