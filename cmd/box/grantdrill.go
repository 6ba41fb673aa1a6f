package main

import (
	"context"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/host"
)

// grantDrillRows are the vm drill's rows for every user holding a grant: what an
// attacker in that account would ask incusd, asked through incus-user as that user
// (drill.RunGrant). A revoked grant has no way in, and no rows.
func grantDrillRows(ctx context.Context, e *env, c *incus.Client) []drill.Result {
	gap, err := host.DetectPortNameGap()
	gap = gap || err != nil // an error reads as the weaker case
	placement := vm.Placement(e.getenv)
	var rows []drill.Result
	err = grantHost(e, c).EachGrantTenant(ctx, func(t host.GrantTenant) {
		tenant := incus.NewDial(t.Socket, t.Dial)
		tenant.Project = t.Project
		rows = append(rows, drill.RunGrant(ctx, drill.GrantOptions{Admin: c, Tenant: tenant, User: t.User,
			Project: t.Project, Bridge: t.Bridge, Profile: placement, Other: t.Other, PortNameGap: gap})...)
		tenant.Close()
	})
	if err != nil {
		return []drill.Result{{ID: "grant", Group: "grant", Probe: "the grants of this host", Targets: []string{},
			Expected: "listed", Observed: "error: " + err.Error(), Status: drill.Error}}
	}
	return rows
}
