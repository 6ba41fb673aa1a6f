package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

func newExposeCmd(e *env) *cobra.Command {
	var r backend.ExposeRequest
	cmd := vmVerb(e, "expose BOX PORT [HOSTPORT] | BOX --list | BOX --remove PORT", "open a door from the host's loopback to a port in a box", nil,
		func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("run 'box expose --help' for usage", "expose takes a box")
			case r.List && r.Remove != "":
				return usagef("pick one", "--list and --remove exclude each other")
			case (r.List || r.Remove != "") && len(args) != 1:
				return usagef("run 'box expose --help' for usage", "--list and --remove take the box only")
			case !r.List && r.Remove == "" && (len(args) < 2 || len(args) > 3):
				return usagef("for example: box expose "+args[0]+" 3000", "expose takes a box, a port and an optional host port")
			}
			name := args[0]
			b, err := bwrapBox(e, name)
			if err != nil {
				return err
			}
			var doors backend.Doors
			if b != nil {
				doors = e.bwrapBoxes().Doors(name) // backend/bwrap/boxes_doors.go
			} else if err := backend.ValidName(name); err != nil {
				return vmErr(e, err)
			} else {
				doors = e.vmBackend().Doors(name) // backend/vm/doors.go
			}
			r.Ports = args[1:]
			exp, err := doors.Run(r)
			if err != nil || !r.List {
				return err
			}
			if len(exp) == 0 {
				note(e, "%s has no exposed ports: 'box expose %s PORT' opens one", name, name)
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PORT\tHOST")
			for _, x := range exp {
				fmt.Fprintf(tw, "%d\t127.0.0.1:%d\n", x.Port, x.HostPort)
			}
			return tw.Flush()
		})
	cmd.Long = helpText("expose", "{{own-netns-tiers}}", policy.TierListWhere(policy.Tier.OwnNetNS, ""))
	cmd.Flags().BoolVar(&r.List, "list", false, "list the box's doors")
	cmd.Flags().StringVar(&r.Remove, "remove", "", "close the door to this port")
	return cmd
}
