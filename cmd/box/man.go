package main

import (
	"github.com/heavy-duty/box/internal/manpage"
	"github.com/spf13/cobra"
)

func newManCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:                   "man DIR",
		Short:                 "write man pages for box and each of its verbs into DIR",
		Long:                  helpText("man"),
		Example:               helpText("man.example"),
		GroupID:               groupOther,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("run 'box man --help' for usage", "man takes one directory to write the pages into")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return manBook(e).Write(cmd.Root(), args[0]) },
	}
}

// manBook is what box's pages say beyond the command tree (help/box.*.txt, exit.*.txt).
func manBook(e *env) manpage.Book {
	return manpage.Book{Version: boxVersion(), Date: manpage.Date(e.getenv), ExitStatus: exitStatusText,
		Environment: helpText("box.environment"), Files: helpText("box.files")}
}

// exitStatusText is a page's EXIT STATUS: the runners' codes (main.go's runners) or the
// other verbs' three; box's own page has both.
func exitStatusText(c *cobra.Command) string {
	switch {
	case !c.HasParent():
		return helpText("exit.other") + "\n\n" + helpText("exit.runner")
	case runners[c.Name()] && !c.Parent().HasParent():
		return helpText("exit.runner")
	}
	return helpText("exit.other")
}
