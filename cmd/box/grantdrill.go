package main

import (
	"context"
	"net"
	"slices"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/host"
)

// grantDrillRows are the vm drill's rows for every user holding a grant: what an
// attacker in that account would ask incusd, asked through incus-user as that user
// (drill.RunGrant). A revoked grant has no way in, and no rows.
func grantDrillRows(ctx context.Context, e *env, c *incus.Client) []drill.Result {
	ps, err := c.Projects(ctx)
	if err != nil {
		return []drill.Result{{ID: "grant", Group: "grant", Probe: "the grants of this host", Targets: []string{},
			Expected: "listed", Observed: "error: " + err.Error(), Status: drill.Error}}
	}
	placement := vm.Placement(e.getenv)
	gap, err := portNameGap()
	gap = gap || err != nil // an error reads as the weaker case
	var rows []drill.Result
	for _, p := range ps {
		owner, ok := p.Config[host.GrantKey]
		if !ok {
			continue
		}
		g, err := e.lookupGrantee(owner)
		if err != nil || g.project() != p.Name {
			continue // doctor's line says what is wrong with it
		}
		s, err := readGrant(ctx, e, c, g)
		if err != nil || len(s.trusted) == 0 || g.SockGID == "" {
			continue
		}
		tenant := incus.NewDial(g.Socket, func(ctx context.Context) (net.Conn, error) { return dialAs(g.Socket, g.UID, g.SockGID) })
		tenant.Project = g.project()
		rows = append(rows, drill.RunGrant(ctx, drill.GrantOptions{Admin: c, Tenant: tenant, User: g.Name,
			Project: g.project(), Bridge: s.plan.Bridge, Profile: placement, Other: otherNetwork(ctx, c, s.plan.Bridge), PortNameGap: gap})...)
		tenant.Close()
	}
	return rows
}

// otherNetwork is a managed network of the host that is not the box bridge ("" for none).
func otherNetwork(ctx context.Context, c *incus.Client, bridge string) string {
	ns, err := c.InProject("default").Networks(ctx)
	if err != nil {
		return ""
	}
	var names []string
	for _, n := range ns {
		if n.Managed && n.Name != bridge {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
