package main

import (
	"github.com/heavy-duty/box/backend"

	"context"
	"fmt"
	"net"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

func newListCmd(e *env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "list the boxes of both backends",
		GroupID: groupVM,
		Long: `List the boxes of both backends, by name: vm boxes (Incus instances tagged
user.box=1, or user.claudebox=1 by box's predecessor) and bwrap boxes (directories box
made and stamped under $XDG_DATA_HOME/box/boxes). Other instances and directories are not
shown: box never touches what it did not make. A bwrap box is Running while a shell or
exec runs in it, else Idle. Without incusd, the bwrap boxes are listed with a warning.
With no box, it says so (on stderr) and how to mint one.

With --json, a JSON array of objects, one per box, sorted by name; the field names are
stable and documented in docs/json.md.`,
		Example: `  box list
  box list --json | jq -r '.[] | select(.state == "Running") | .name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := allBoxes(e)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(e.stdout, out)
			}
			if len(out) == 0 {
				// An empty table says nothing; say what is (not) there and how to go on.
				fmt.Fprintln(e.stderr, "box: no boxes here yet: 'box new --name NAME' mints one ('box templates' lists what it can be)")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			// LOCATION only on a cluster: where each box lives.
			loc := func(boxJSON) string { return "" }
			if clustered(out) {
				loc = func(s boxJSON) string { return "\t" + dash(s.Location) }
			}
			fmt.Fprintln(tw, "NAME\tBACKEND\tSTATE\tTYPE\tIPV4\tTEMPLATE\tUSER\tCREATED"+loc(boxJSON{Location: "LOCATION"}))
			for _, s := range out {
				created, _ := time.Parse(time.RFC3339, s.Created)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", s.Name, s.Backend, s.State, shortType(s.Type), dash(s.IPv4),
					dash(s.Template), s.User, stampTime(created), loc(s))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of objects (fields: docs/json.md)")
	return cmd
}

// allBoxes lists the boxes of both backends, by name. Without incusd (its socket
// absent: the vm backend is not set up here) the bwrap boxes are listed with a warning;
// any other vm failure is an error.
func allBoxes(e *env) ([]boxJSON, error) {
	out := []boxJSON{} // an empty list is [] in --json, never null
	for _, be := range backends(e) {
		list, err := be.List()
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			out = append(out, boxJSON(s))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// List is box list for the vm backend. Without incusd (its socket absent: the vm
// backend is not set up here) it lists nothing, with a warning.
func (v vmBackend) List() ([]backend.Summary, error) {
	e := v.e
	ctx, stop := vmContext()
	defer stop()
	c := e.client()
	defer c.Close()
	list, err := listBoxes(ctx, c, vm.Placement(e.getenv))
	switch {
	case err != nil && noIncus(err):
		if !e.quiet {
			fmt.Fprintf(e.stderr, "box: warning: vm boxes not listed: no incusd socket at %s\n", e.socketPath())
		}
		return nil, nil
	case err != nil:
		return nil, vmErr(e, err)
	}
	out := make([]backend.Summary, 0, len(list))
	for _, s := range list {
		out = append(out, summaryOf(s))
	}
	return out, nil
}

// listBoxes reads every box in one list call (recursion=1), then the addresses of the
// running ones: a state call each when they are few, else one call for the DHCP leases
// of the placement profile's network (measured: a state call and a leases call cost
// incusd about the same), with a state call for any running box without a lease there.
func listBoxes(ctx context.Context, c *incus.Client, placement string) ([]vm.Summary, error) {
	if c.RemoteName() != "" {
		return listRemoteBoxes(ctx, c)
	}
	list, err := c.ListBoxes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]vm.Summary, len(list))
	running := 0
	for i, inst := range list {
		out[i] = vm.Summarize(inst, nil)
		if inst.Running() {
			running++
		}
	}
	ips := map[string]string{}
	if running > 2 {
		ips = leaseAddresses(ctx, c, placement)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, inst := range list {
		if !inst.Running() {
			continue
		}
		if ip := ips[inst.Name]; ip != "" {
			out[i].IPv4 = ip
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if st, err := c.State(ctx, inst.Name); err == nil {
				out[i] = vm.Summarize(inst, st)
			} // else it stopped or went meanwhile: show what the list said
		}()
	}
	wg.Wait()
	vm.SortSummaries(out)
	return out, nil
}

// leaseAddresses maps instance names to their IPv4 lease on the placement profile's
// network; empty when that cannot be read (the caller falls back to state calls).
func leaseAddresses(ctx context.Context, c *incus.Client, placement string) map[string]string {
	m := map[string]string{}
	p, err := c.Profile(ctx, placement)
	if err != nil {
		return m
	}
	network := p.ProfileNetwork(vm.Iface)
	if network == "" {
		return m
	}
	ls, err := c.Leases(ctx, network)
	if err != nil {
		return m
	}
	for _, l := range ls {
		if ip := net.ParseIP(l.Address); ip != nil && ip.To4() != nil && (l.Project == "" || l.Project == projectOf(c)) {
			m[l.Hostname] = l.Address
		}
	}
	return m
}

// listRemoteBoxes reads every box with its state in one request (recursion=2): over
// the network each round trip costs more than the state incusd adds to the answer.
func listRemoteBoxes(ctx context.Context, c *incus.Client) ([]vm.Summary, error) {
	list, err := c.ListBoxesFull(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]vm.Summary, len(list))
	for i, inst := range list {
		out[i] = vm.Summarize(inst.Instance, inst.State)
	}
	vm.SortSummaries(out)
	return out, nil
}

// clustered reports whether any box has a cluster member as its location.
func clustered(list []boxJSON) bool {
	for _, s := range list {
		if s.Location != "" {
			return true
		}
	}
	return false
}

func projectOf(c *incus.Client) string {
	if c.Project == "" {
		return "default"
	}
	return c.Project
}

// shortType is the table's TYPE: vm or container.
func shortType(t string) string {
	if t == incus.TypeVM {
		return "vm"
	}
	return t
}

// boxJSON is one element of 'box list --json' and the head of 'box info --json'. The
// field names are a stable interface, documented in docs/json.md: add fields, never
// rename or remove one.
type boxJSON struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Type       string `json:"type"`
	IPv4       string `json:"ipv4"`
	Template   string `json:"template"`
	User       string `json:"user"`
	Origin     string `json:"origin"`
	OriginFrom string `json:"origin_from"`
	Created    string `json:"created"`
	Legacy     bool   `json:"legacy"`
	Location   string `json:"location"` // the cluster member ("" off a cluster)
	Backend    string `json:"backend"`  // "vm" or "bwrap"
	// bwrap boxes: the stamped profile, network tier and working directory ("" for vm)
	Profile string `json:"profile"`
	Network string `json:"network"`
	Workdir string `json:"workdir"`
}

func newBoxJSON(s vm.Summary) boxJSON { return boxJSON(summaryOf(s)) }

// summaryOf is a vm box's summary as the backend interface answers it.
func summaryOf(s vm.Summary) backend.Summary {
	created := ""
	if !s.Created.IsZero() {
		created = s.Created.UTC().Format(time.RFC3339)
	}
	return backend.Summary{
		Name: s.Name, State: s.State, Type: s.Type, IPv4: s.IPv4, Template: s.Template, User: s.User,
		Origin: s.Origin, OriginFrom: s.OriginFrom, Created: created, Legacy: s.Legacy, Location: s.Location,
		Backend: profiles.BackendVM,
	}
}
