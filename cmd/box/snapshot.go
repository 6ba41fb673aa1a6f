package main

import (
	"fmt"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/spf13/cobra"
)

func newSnapshotCmd(e *env) *cobra.Command {
	return vmVerb(e, "snapshot BOX [LABEL]", "checkpoint a box (default label manual-<epoch>)", argRange(1, 2, "snapshot takes a box and an optional label"),
		func(cmd *cobra.Command, args []string) error {
			label := backend.DefaultLabel(time.Now())
			if len(args) == 2 {
				label = args[1]
			}
			return onBox(e, args[0], func(be backend.Backend) error {
				taken, err := be.Snapshot(args[0], label)
				if err == nil && be.Kind() != "vm" { // vm prints the label itself
					fmt.Fprintln(e.stdout, taken)
				}
				return err
			})
		})
}
