package vm

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/profiles"
)

// List is box list for the vm backend. Without incusd (its socket absent: the vm
// backend is not set up here) it lists nothing, with a warning.
func (b Backend) List() ([]backend.Summary, error) {
	ctx, stop := b.Context()
	defer stop()
	c := b.Client()
	defer c.Close()
	list, err := listBoxes(ctx, c, Placement(b.Getenv))
	switch {
	case err != nil && NoIncus(err):
		// A machine that never had Incus (no directory for its socket) is a bwrap-only
		// machine, not a problem to repeat on every list; nor is a stopped incusd to a
		// user who could have no vm box here (VMExpected).
		if _, dirErr := os.Stat(filepath.Dir(b.Socket)); !b.Quiet && dirErr == nil && (b.VMExpected == nil || b.VMExpected()) {
			fmt.Fprintf(b.Stderr, "box: warning: vm boxes not listed: no incusd socket at %s (start incusd; 'box doctor' checks the host)\n", b.Socket)
		}
		return nil, nil
	case err != nil:
		return nil, b.err(err)
	}
	out := make([]backend.Summary, 0, len(list))
	for _, s := range list {
		out = append(out, s.Backend())
	}
	return out, nil
}

// listBoxes reads every box with its state in one request (ListBoxesFull: recursion=2,
// filtered by incusd to box's tags), locally and on a remote alike: the state incusd
// adds to the answer costs less than one more round trip, and a single request cannot
// stall behind another. It asks more only where the answer lacks a field:
//   - a running box incusd could not render in full (no state) gets its own /state;
//   - running boxes whose state shows no IPv4 on eth0 (a VM without its agent reports
//     no network) get it from the DHCP leases of the placement profile's network: two
//     calls for all of them.
func listBoxes(ctx context.Context, c *incus.Client, placement string) ([]Summary, error) {
	list, err := c.ListBoxesFull(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(list))
	var noAddress []int
	for i, inst := range list {
		if !inst.Running() {
			out[i] = Summarize(inst.Instance, nil)
			continue
		}
		st := inst.State
		if st == nil {
			st, _ = c.State(ctx, inst.Name) // on error it stopped or went meanwhile: show what the list said
		}
		out[i] = Summarize(inst.Instance, st)
		if out[i].IPv4 == "" {
			noAddress = append(noAddress, i)
		}
	}
	if len(noAddress) > 0 {
		ips := leaseAddresses(ctx, c, placement)
		for _, i := range noAddress {
			out[i].IPv4 = ips[out[i].Name]
		}
	}
	SortSummaries(out)
	return out, nil
}

// leaseAddresses maps instance names to their IPv4 lease on the placement profile's
// network; empty when that cannot be read (the address then stays unknown, as the
// box's own state left it).
func leaseAddresses(ctx context.Context, c *incus.Client, placement string) map[string]string {
	m := map[string]string{}
	p, err := c.Profile(ctx, placement)
	if err != nil {
		return m
	}
	network := p.ProfileNetwork(Iface)
	if network == "" {
		return m
	}
	ls, err := c.Leases(ctx, network)
	if err != nil {
		return m
	}
	for _, l := range ls {
		if ip := net.ParseIP(l.Address); ip != nil && ip.To4() != nil && (l.Project == "" || l.Project == ProjectOf(c)) {
			m[l.Hostname] = l.Address
		}
	}
	return m
}

// ProjectOf is the Incus project c works in.
func ProjectOf(c *incus.Client) string {
	if c.Project == "" {
		return "default"
	}
	return c.Project
}

// Backend is the summary as the backend interface answers it.
func (s Summary) Backend() backend.Summary {
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

// ShortType is box list's TYPE: vm or container.
func ShortType(t string) string {
	if t == incus.TypeVM {
		return "vm"
	}
	return t
}
