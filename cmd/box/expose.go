package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

type exposeOptions struct {
	list   bool
	remove string
}

func newExposeCmd(e *env) *cobra.Command {
	o := &exposeOptions{}
	cmd := &cobra.Command{
		Use:               "expose BOX PORT [HOSTPORT] | BOX --list | BOX --remove PORT",
		Short:             "open a door from the host's loopback to a port in a box",
		GroupID:           groupVM,
		Long:              helpText("expose"),
		Example:           helpText("expose.example"),
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("run 'box expose --help' for usage", "expose takes a box")
			case o.list && o.remove != "":
				return usagef("pick one", "--list and --remove exclude each other")
			case (o.list || o.remove != "") && len(args) != 1:
				return usagef("run 'box expose --help' for usage", "--list and --remove take the box only")
			case !o.list && o.remove == "" && (len(args) < 2 || len(args) > 3):
				return usagef("for example: box expose "+args[0]+" 3000", "expose takes a box, a port and an optional host port")
			}
			b, err := bwrapBox(e, args[0])
			if err != nil {
				return err
			}
			if b != nil {
				return runExpose(e, o, args, bwrapExposer(e, args[0]))
			}
			if err := backend.ValidName(args[0]); err != nil {
				return vmErr(e, err)
			}
			return runExpose(e, o, args, vmExposer(e, args[0]))
		},
	}
	cmd.Flags().BoolVar(&o.list, "list", false, "list the box's doors")
	cmd.Flags().StringVar(&o.remove, "remove", "", "close the door to this port")
	return cmd
}

// exposer is one backend's box expose on one box, ports read as that backend words them.
type exposer struct {
	port      func(what, s string) (int, error)
	expose    func(port, hostPort int) error
	unexpose  func(port int) error
	exposures func() ([]backend.Exposure, error)
}

// runExpose reads the ports (all before any change), then opens, closes or lists.
func runExpose(e *env, o *exposeOptions, args []string, x exposer) error {
	name := args[0]
	switch {
	case o.remove != "":
		p, err := x.port("--remove", o.remove)
		if err != nil {
			return err
		}
		return x.unexpose(p)
	case !o.list:
		p, err := x.port("port", args[1])
		if err != nil {
			return err
		}
		hp := p
		if len(args) == 3 {
			if hp, err = x.port("host port", args[2]); err != nil {
				return err
			}
		}
		return x.expose(p, hp)
	}
	exp, err := x.exposures()
	if err != nil {
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
}

// vmExposer is box expose on a vm box: an Incus proxy device.
func vmExposer(e *env, name string) exposer {
	b := vmBackend{e: e}.vm()
	return exposer{
		port: func(what, s string) (int, error) {
			p, err := vm.ParsePort(what, s)
			if err != nil {
				return 0, vmErr(e, err)
			}
			return p, nil
		},
		expose:   func(p, hp int) error { return b.Expose(name, p, hp) },
		unexpose: func(p int) error { return b.Unexpose(name, p) },
		exposures: func() ([]backend.Exposure, error) {
			exp, err := b.Exposures(name)
			out := make([]backend.Exposure, len(exp))
			for i, x := range exp {
				out[i] = backend.Exposure(x)
			}
			return out, err
		},
	}
}

// bwrapExposer is box expose on a bwrap box: the doors are kept with the box.
func bwrapExposer(e *env, name string) exposer {
	be := e.bwrapBoxes().Boxes
	return exposer{
		port: func(what, s string) (int, error) {
			p, err := policy.ParsePort(s)
			if err != nil {
				return 0, usagef("for example: box expose "+name+" 3000", "%s: %s", what, err)
			}
			return int(p), nil
		},
		expose: func(p, hp int) error {
			if err := be.Expose(name, uint16(p), uint16(hp)); err != nil {
				return err
			}
			note(e, "%s: port %d is published at 127.0.0.1:%d by its sessions from the next one on (box shell %s, box exec %s)", name, p, hp, name, name)
			return nil
		},
		unexpose:  func(p int) error { return be.Unexpose(name, uint16(p)) },
		exposures: func() ([]backend.Exposure, error) { return be.Exposures(name) },
	}
}
