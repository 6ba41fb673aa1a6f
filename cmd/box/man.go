package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newManCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "man DIR",
		Short: "write man pages for box and each of its verbs into DIR",
		Long: `Write the man pages, generated from box's own command tree and help, into DIR
(created if missing): box.1 and one box-VERB.1 for each verb. Help and man pages
never disagree, because they are the same text.

The page date is $SOURCE_DATE_EPOCH when set (reproducible builds), else today.
'make install' (and the Nix package) install the pages into share/man/man1.`,
		Example: `  box man /tmp/box-man && man /tmp/box-man/box-run.1
  box man /usr/local/share/man/man1`,
		GroupID:               groupOther,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("run 'box man --help' for usage", "man takes one directory to write the pages into")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("man pages: %w", err)
			}
			root := cmd.Root()
			root.DisableAutoGenTag = true // no build date or tool name in the pages
			header := &doc.GenManHeader{
				Title:   "BOX",
				Section: "1",
				Source:  "box " + boxVersion(),
				Manual:  "box manual",
			}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("man pages in %s: %w", dir, err)
			}
			return nil
		},
	}
}
