package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newStartCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "start BOX",
		Short:   "start a stopped box",
		GroupID: groupVM,
		Long: `Start a stopped box. Starting a running box does nothing. A bwrap box is not
started (it runs while box shell or box exec does): refused.`,
		Example:           `  box start work && box shell work`,
		Args:              boxArgs(1, "one box"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := backendFor(e, args[0])
			if err != nil {
				return err
			}
			return be.Start(args[0])
		},
	}
}

// Start is box start for a vm box; a running box is left as it is.
func (v vmBackend) Start(name string) error {
	e := v.e
	ctx, c, inst, done, err := v.open(name)
	if err != nil {
		return err
	}
	defer done()
	if inst.Running() {
		fmt.Fprintf(e.stderr, "box: %s is already running\n", name)
		return nil
	}
	return vmErr(e, c.Start(ctx, name))
}
