package host

// The grants box drill probes: every user holding a grant, with their way in.

import (
	"context"
	"net"
	"slices"

	"github.com/heavy-duty/box/backend/incus"
)

// GrantTenant is one granted user as the drill reaches incusd through incus-user: as that
// user, what an attacker in their account would ask.
type GrantTenant struct {
	User, Project string
	Socket        string                                      // incus-user's socket
	Dial          func(ctx context.Context) (net.Conn, error) // to Socket, as the user
	Bridge        string                                      // the box bridge, the one network they may use
	Other         string                                      // another managed network of the host ("" for none)
}

// EachGrantTenant calls f for every user holding a live grant, one after the other (each
// read after f probed the one before). A revoked grant has no way in, and no call; a
// grant doctor finds wrong (the account gone, its uid reused) is left to doctor's line.
func (h GrantHost) EachGrantTenant(ctx context.Context, f func(GrantTenant)) error {
	c := h.Client
	ps, err := c.Projects(ctx)
	if err != nil {
		return err
	}
	for _, p := range ps {
		owner, ok := p.Config[GrantKey]
		if !ok {
			continue
		}
		g, err := h.lookup(owner)
		if err != nil || g.Project() != p.Name {
			continue // doctor's line says what is wrong with it
		}
		s, err := h.readGrant(ctx, g)
		if err != nil || len(s.trusted) == 0 || g.SockGID == "" {
			continue
		}
		f(GrantTenant{User: g.Name, Project: g.Project(), Socket: g.Socket,
			Dial:   func(ctx context.Context) (net.Conn, error) { return DialAs(g.Socket, g.UID, g.SockGID) },
			Bridge: s.plan.Bridge, Other: otherNetwork(ctx, c, s.plan.Bridge)})
	}
	return nil
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
