package incus

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Cluster is the part of GET /1.0/cluster box reads.
type Cluster struct {
	ServerName string `json:"server_name"` // the member this client talks to
	Enabled    bool   `json:"enabled"`
}

// ClusterMember is one member of a cluster.
type ClusterMember struct {
	ServerName string `json:"server_name"`
	Status     string `json:"status"` // Online, Offline, ...
}

// Cluster says whether the daemon is a cluster member, and which.
func (c *Client) Cluster(ctx context.Context) (*Cluster, error) {
	var cl Cluster
	if _, err := c.get(ctx, "/cluster", nil, &cl); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &cl, nil
}

// ClusterMembers lists a cluster's members (nil, with no error, off a cluster).
func (c *Client) ClusterMembers(ctx context.Context) ([]ClusterMember, error) {
	cl, err := c.Cluster(ctx)
	if err != nil || !cl.Enabled {
		return nil, err
	}
	var ms []ClusterMember
	if _, err := c.get(ctx, "/cluster/members", url.Values{"recursion": {"1"}}, &ms); err != nil {
		return nil, fmt.Errorf("cluster members: %w", err)
	}
	return ms, nil
}

// CreatePendingNetwork defines network n on one cluster member only (pending until
// CreateNetwork without a member creates it everywhere): a cluster's network is made
// member by member first. Only member-specific keys may be set here; n's others wait
// for the cluster-wide create.
func (c *Client) CreatePendingNetwork(ctx context.Context, n Network, member string) error {
	body := map[string]any{"name": n.Name, "type": n.Type}
	if err := c.query(ctx, http.MethodPost, "/networks", url.Values{"target": {member}}, body, nil); err != nil {
		return fmt.Errorf("define network %q on member %s: %w", n.Name, member, err)
	}
	return nil
}

// NetworkOn reads network name as one cluster member has it (its status there).
func (c *Client) NetworkOn(ctx context.Context, name, member string) (*Network, error) {
	var n Network
	if _, err := c.get(ctx, "/networks/"+url.PathEscape(name), url.Values{"target": {member}}, &n); err != nil {
		return nil, fmt.Errorf("network %q on member %s: %w", name, member, err)
	}
	return &n, nil
}
