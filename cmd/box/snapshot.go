package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func newSnapshotCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "snapshot BOX [LABEL]",
		Short:   "checkpoint a box (default label manual-<epoch>)",
		GroupID: groupVM,
		Long:    helpText("snapshot"),
		Example: helpText("snapshot.example"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("run 'box snapshot --help' for usage", "snapshot takes a box and an optional label")
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			label := "manual-" + strconv.FormatInt(time.Now().Unix(), 10)
			if len(args) == 2 {
				label = args[1]
			}
			be, err := backendFor(e, args[0])
			if err != nil {
				return err
			}
			taken, err := be.Snapshot(args[0], label)
			if err == nil && be.Kind() != "vm" { // vm prints the label itself
				fmt.Fprintln(e.stdout, taken)
			}
			return err
		},
	}
}
