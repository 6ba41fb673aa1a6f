package incus

import (
	"context"
	"fmt"
	"net/url"
)

// This file types what the host stack (setup-host, teardown-host, doctor) sends and
// reads: networks, network ACLs, and profile writes.

// Network is a network as box reads and writes it.
type Network struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Type        string            `json:"type"`
	Managed     bool              `json:"managed"`
	Status      string            `json:"status,omitempty"`
	Config      map[string]string `json:"config"`
	UsedBy      []string          `json:"used_by,omitempty"`
}

// ACLRule is one rule of a network ACL. Empty fields mean "any".
type ACLRule struct {
	Action          string `json:"action"` // allow, reject, drop
	Source          string `json:"source"`
	Destination     string `json:"destination"`
	Protocol        string `json:"protocol"`
	SourcePort      string `json:"source_port"`
	DestinationPort string `json:"destination_port"`
	ICMPType        string `json:"icmp_type"`
	ICMPCode        string `json:"icmp_code"`
	Description     string `json:"description"`
	State           string `json:"state"` // enabled, disabled, logged
}

// NetworkACL is a network ACL.
type NetworkACL struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Egress      []ACLRule         `json:"egress"`
	Ingress     []ACLRule         `json:"ingress"`
	Config      map[string]string `json:"config"`
	UsedBy      []string          `json:"used_by,omitempty"`
}

// Networks lists every network the daemon knows (managed or not: host interfaces too).
func (c *Client) Networks(ctx context.Context) ([]Network, error) {
	var ns []Network
	if _, err := c.get(ctx, "/networks", url.Values{"recursion": {"1"}}, &ns); err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	return ns, nil
}

// Network returns one network.
func (c *Client) Network(ctx context.Context, name string) (*Network, error) {
	var n Network
	if _, err := c.get(ctx, "/networks/"+url.PathEscape(name), nil, &n); err != nil {
		return nil, fmt.Errorf("network %q: %w", name, err)
	}
	return &n, nil
}

// CreateNetwork creates a managed network.
func (c *Client) CreateNetwork(ctx context.Context, n Network) error {
	body := map[string]any{"name": n.Name, "type": n.Type, "description": n.Description, "config": n.Config}
	if err := c.Query(ctx, "POST", "/networks", body, nil); err != nil {
		return fmt.Errorf("create network %q: %w", n.Name, err)
	}
	return nil
}

// UpdateNetwork replaces a network's description and config (PUT): keys left out are
// unset.
func (c *Client) UpdateNetwork(ctx context.Context, n Network) error {
	body := map[string]any{"description": n.Description, "config": n.Config}
	if err := c.Query(ctx, "PUT", "/networks/"+url.PathEscape(n.Name), body, nil); err != nil {
		return fmt.Errorf("update network %q: %w", n.Name, err)
	}
	return nil
}

// DeleteNetwork deletes a network. Incus refuses one in use.
func (c *Client) DeleteNetwork(ctx context.Context, name string) error {
	if err := c.Query(ctx, "DELETE", "/networks/"+url.PathEscape(name), nil, nil); err != nil {
		return fmt.Errorf("delete network %q: %w", name, err)
	}
	return nil
}

// NetworkACLByName returns one network ACL.
func (c *Client) NetworkACLByName(ctx context.Context, name string) (*NetworkACL, error) {
	var a NetworkACL
	if _, err := c.get(ctx, "/network-acls/"+url.PathEscape(name), nil, &a); err != nil {
		return nil, fmt.Errorf("network ACL %q: %w", name, err)
	}
	return &a, nil
}

// CreateNetworkACL creates a network ACL.
func (c *Client) CreateNetworkACL(ctx context.Context, a NetworkACL) error {
	body := map[string]any{"name": a.Name, "description": a.Description,
		"egress": nonNil(a.Egress), "ingress": nonNil(a.Ingress), "config": a.Config}
	if err := c.Query(ctx, "POST", "/network-acls", body, nil); err != nil {
		return fmt.Errorf("create network ACL %q: %w", a.Name, err)
	}
	return nil
}

// UpdateNetworkACL replaces a network ACL's rules, description and config (PUT).
func (c *Client) UpdateNetworkACL(ctx context.Context, a NetworkACL) error {
	body := map[string]any{"description": a.Description,
		"egress": nonNil(a.Egress), "ingress": nonNil(a.Ingress), "config": a.Config}
	if err := c.Query(ctx, "PUT", "/network-acls/"+url.PathEscape(a.Name), body, nil); err != nil {
		return fmt.Errorf("update network ACL %q: %w", a.Name, err)
	}
	return nil
}

// DeleteNetworkACL deletes a network ACL. Incus refuses one in use.
func (c *Client) DeleteNetworkACL(ctx context.Context, name string) error {
	if err := c.Query(ctx, "DELETE", "/network-acls/"+url.PathEscape(name), nil, nil); err != nil {
		return fmt.Errorf("delete network ACL %q: %w", name, err)
	}
	return nil
}

func nonNil(r []ACLRule) []ACLRule {
	if r == nil {
		return []ACLRule{}
	}
	return r
}

// CreateProfileFrom creates a profile with p's description, config and devices.
func (c *Client) CreateProfileFrom(ctx context.Context, p Profile) error {
	body := map[string]any{"name": p.Name, "description": p.Description, "config": p.Config, "devices": p.Devices}
	if err := c.Query(ctx, "POST", "/profiles", body, nil); err != nil {
		return fmt.Errorf("create profile %q: %w", p.Name, err)
	}
	return nil
}

// ReplaceProfile replaces a profile's description, config and devices (PUT).
func (c *Client) ReplaceProfile(ctx context.Context, p Profile) error {
	body := map[string]any{"description": p.Description, "config": p.Config, "devices": p.Devices}
	if err := c.Query(ctx, "PUT", "/profiles/"+url.PathEscape(p.Name), body, nil); err != nil {
		return fmt.Errorf("update profile %q: %w", p.Name, err)
	}
	return nil
}

// RemoveProfile deletes a profile. Incus refuses one in use.
func (c *Client) RemoveProfile(ctx context.Context, name string) error {
	if err := c.Query(ctx, "DELETE", "/profiles/"+url.PathEscape(name), nil, nil); err != nil {
		return fmt.Errorf("delete profile %q: %w", name, err)
	}
	return nil
}

// NetworkAddresses returns the addresses of a network's interface on the daemon's host
// (GET /1.0/networks/{name}/state): for a remote, the only view of its host's interfaces.
func (c *Client) NetworkAddresses(ctx context.Context, name string) ([]NetworkAddress, error) {
	var st struct {
		Addresses []NetworkAddress `json:"addresses"`
	}
	if _, err := c.get(ctx, "/networks/"+url.PathEscape(name)+"/state", nil, &st); err != nil {
		return nil, fmt.Errorf("network %q state: %w", name, err)
	}
	return st.Addresses, nil
}
