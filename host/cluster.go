package host

// The stack on an Incus cluster. The network, the ACL and the profile are cluster-wide
// objects, built once from any member; a cluster's network is first defined on every
// member (pending), then created everywhere at once. The host firewall is nftables on
// each member's own host: setup-host applies it where it runs, and names every other
// member with the command that applies it there.

import (
	"context"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/incus"
)

// MemberFirewallFix is what a cluster member box does not run on needs: box setup-host
// there, which finds the cluster's stack built and adds that host's firewall and unit.
func MemberFirewallFix(member string) string {
	return fmt.Sprintf("the host firewall is nftables on each member's own host: run 'box setup-host' as root on member %s (it finds the cluster's stack built and adds that host's firewall and boot unit); 'box doctor' there checks them", member)
}

// clusterFacts are the members of the cluster c talks to and the one it is on (nil and
// "" off a cluster).
type clusterFacts struct {
	members []string
	self    string
}

func readCluster(ctx context.Context, c *incus.Client) (clusterFacts, error) {
	cl, err := c.Cluster(ctx)
	if incus.IsNotFound(err) {
		return clusterFacts{}, nil // a daemon built without clustering
	}
	if err != nil || !cl.Enabled {
		return clusterFacts{}, err
	}
	ms, err := c.ClusterMembers(ctx)
	if err != nil {
		return clusterFacts{}, err
	}
	f := clusterFacts{self: cl.ServerName}
	for _, m := range ms {
		f.members = append(f.members, m.ServerName)
	}
	return f, nil
}

// others are the members whose firewall is not applied from here: all of them from a
// remote, else every one but this.
func (f clusterFacts) others(remote bool) []string {
	var out []string
	for _, m := range f.members {
		if remote || m != f.self {
			out = append(out, m)
		}
	}
	return out
}

// createClusterNetwork defines want on every member, then creates it cluster-wide. A
// failure deletes what was defined: no pending network is left behind.
func createClusterNetwork(ctx context.Context, c *incus.Client, want incus.Network, members []string) error {
	for _, m := range members {
		if err := c.CreatePendingNetwork(ctx, want, m); err != nil {
			_ = c.DeleteNetwork(context.WithoutCancel(ctx), want.Name)
			return err
		}
	}
	if err := c.CreateNetwork(ctx, want); err != nil {
		_ = c.DeleteNetwork(context.WithoutCancel(ctx), want.Name)
		return err
	}
	return nil
}

// memberNetworkChecks: the bridge is created on every member (its status there).
func memberNetworkChecks(ctx context.Context, c *incus.Client, br string, f clusterFacts) Check {
	var bad []string
	for _, m := range f.members {
		n, err := c.NetworkOn(ctx, br, m)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", m, err))
		case n.Status != "Created":
			bad = append(bad, fmt.Sprintf("%s: %s", m, n.Status))
		}
	}
	if len(bad) > 0 {
		return Check{Name: CheckMembers, Status: Fail, Detail: "network " + br + " not created on every member: " + strings.Join(bad, "; "), Fix: "box setup-host"}
	}
	return Check{Name: CheckMembers, Status: OK, Detail: fmt.Sprintf("network %s created on every member (%s)", br, strings.Join(f.members, ", "))}
}
