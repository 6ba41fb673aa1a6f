package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

type exposeOptions struct {
	list   bool
	remove string
}

func newExposeCmd(e *env) *cobra.Command {
	o := &exposeOptions{}
	cmd := &cobra.Command{
		Use:     "expose BOX PORT [HOSTPORT] | BOX --list | BOX --remove PORT",
		Short:   "open a door from the host's loopback to a port in a box",
		GroupID: groupVM,
		Long: `Forward 127.0.0.1:HOSTPORT on this host (default: PORT) to PORT inside a box, for when
you want to see a box's dev server in your browser. The host side is always 127.0.0.1:
no other machine can use the door, and there is no flag to widen it.

The door is an Incus proxy device (expose-PORT) whose far end connects to 127.0.0.1:PORT
inside the box's own network namespace: the in-box server may listen on its loopback,
and nothing crosses the box bridge, so the bridge's ACL, the host firewall and port
isolation stay exactly as they are: the LAN and the other boxes gain no path. Refused:
a port outside 1-65535, a port already exposed, a host port another box's door or a
listener here already uses.

Containers only, for now: Incus forwards to a virtual machine only in NAT mode, through
the bridge, which needs the isolation stack to admit loopback DNAT; box refuses a VM
rather than open a door that does not answer.

--list shows the doors, --remove PORT closes one. 'box info' and 'box doctor' show them.`,
		Example: `  box expose web 3000          # then open http://127.0.0.1:3000
  box expose web 3000 8080     # http://127.0.0.1:8080 -> web:3000
  box expose web --list
  box expose web --remove 3000`,
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
			if err := vmOnlyVerb(e, "expose", args[0]); err != nil {
				return err
			}
			return runExpose(e, o, args)
		},
	}
	cmd.Flags().BoolVar(&o.list, "list", false, "list the box's doors")
	cmd.Flags().StringVar(&o.remove, "remove", "", "close the door to this port")
	return cmd
}

func runExpose(e *env, o *exposeOptions, args []string) error {
	name := args[0]
	if err := incus.ValidateName(name); err != nil {
		return vmErr(e, err)
	}
	var port, hostPort int
	var err error
	switch {
	case o.remove != "":
		if port, err = vm.ParsePort("--remove", o.remove); err != nil {
			return vmErr(e, err)
		}
	case !o.list:
		if port, err = vm.ParsePort("port", args[1]); err != nil {
			return vmErr(e, err)
		}
		hostPort = port
		if len(args) == 3 {
			if hostPort, err = vm.ParsePort("host port", args[2]); err != nil {
				return vmErr(e, err)
			}
		}
	}
	ctx, stop := vmContext()
	defer stop()
	c := e.client()
	defer c.Close()
	inst, err := resolve(ctx, e, c, name)
	if err != nil {
		return err
	}
	exp, _ := vm.Exposures(inst.Devices)
	switch {
	case o.list:
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
	case o.remove != "":
		for _, x := range exp {
			if x.Port == port {
				if err := c.SetDevice(ctx, name, x.Device, nil); err != nil {
					return vmErr(e, err)
				}
				note(e, "closed 127.0.0.1:%d -> %s:%d", x.HostPort, name, port)
				return nil
			}
		}
		return withHint(fmt.Errorf("box %q has no door to port %d", name, port), "'box expose "+name+" --list' shows them")
	}

	if inst.Type == incus.TypeVM {
		return withHint(fmt.Errorf("box %q is a virtual machine: box expose opens doors into containers only, for now", name),
			"Incus forwards to a VM only in NAT mode, through the bridge, which box's isolation stack does not admit yet")
	}
	for _, x := range exp {
		if x.Port == port {
			return withHint(fmt.Errorf("box %q already exposes port %d (at 127.0.0.1:%d)", name, port, x.HostPort),
				fmt.Sprintf("box expose %s --remove %d first", name, port))
		}
	}
	if err := hostPortFree(ctx, c, hostPort); err != nil {
		return err
	}
	dev, d := vm.ExposureDevice(port, hostPort)
	if err := c.SetDevice(ctx, name, dev, d); err != nil {
		return vmErr(e, fmt.Errorf("expose port %d of box %q: %w", port, name, err))
	}
	note(e, "127.0.0.1:%d -> %s:%d (the server in the box may listen on its loopback); 'box expose %s --remove %d' closes it",
		hostPort, name, port, name, port)
	return nil
}

// portTakenError: a host port is already in use, by another door or a listener.
type portTakenError struct {
	Port int
	By   string
}

func (e *portTakenError) Error() string {
	return fmt.Sprintf("host port %d is in use (%s)", e.Port, e.By)
}

func (e *portTakenError) Hint() string {
	return "name another host port: box expose BOX PORT HOSTPORT"
}

// hostPortFree refuses a host port that a door of any box (running or not: a stopped
// box's door opens when it starts) or a listener on this host's loopback holds. A
// listener would be shadowed by the door, or fail it.
func hostPortFree(ctx context.Context, c *incus.Client, hostPort int) error {
	all, err := c.ListInstances(ctx)
	if err != nil {
		return err
	}
	for _, i := range all {
		for dn, d := range i.Devices {
			if d["type"] == "proxy" && listenPort(d["listen"]) == hostPort {
				return &portTakenError{hostPort, fmt.Sprintf("device %s of instance %s", dn, i.Name)}
			}
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)))
	if err != nil {
		return &portTakenError{hostPort, "something on this host listens on it"}
	}
	return l.Close()
}

// listenPort is the port of a proxy listen address (tcp:ADDR:PORT), 0 when unreadable.
func listenPort(listen string) int {
	rest, ok := strings.CutPrefix(listen, "tcp:")
	if !ok {
		return 0
	}
	_, p, err := net.SplitHostPort(rest)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
