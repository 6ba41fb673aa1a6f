package vm

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
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
		// machine, not a problem to repeat on every list.
		if _, dirErr := os.Stat(filepath.Dir(b.Socket)); !b.Quiet && dirErr == nil {
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

// listBoxes reads every box in one list call (recursion=1), then the addresses of the
// running ones: a state call each when they are few, else one call for the DHCP leases
// of the placement profile's network (measured: a state call and a leases call cost
// incusd about the same), with a state call for any running box without a lease there.
func listBoxes(ctx context.Context, c *incus.Client, placement string) ([]Summary, error) {
	if c.RemoteName() != "" {
		return listRemoteBoxes(ctx, c)
	}
	list, err := c.ListBoxes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(list))
	running := 0
	for i, inst := range list {
		out[i] = Summarize(inst, nil)
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
				out[i] = Summarize(inst, st)
			} // else it stopped or went meanwhile: show what the list said
		}()
	}
	wg.Wait()
	SortSummaries(out)
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

// listRemoteBoxes reads every box with its state in one request (recursion=2): over
// the network each round trip costs more than the state incusd adds to the answer.
func listRemoteBoxes(ctx context.Context, c *incus.Client) ([]Summary, error) {
	list, err := c.ListBoxesFull(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(list))
	for i, inst := range list {
		out[i] = Summarize(inst.Instance, inst.State)
	}
	SortSummaries(out)
	return out, nil
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
