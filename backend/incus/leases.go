package incus

import (
	"context"
	"fmt"
	"net/url"
)

// Lease is one DHCP lease of a managed network.
type Lease struct {
	Hostname string `json:"hostname"` // the instance's name for Incus's own leases
	Hwaddr   string `json:"hwaddr"`
	Address  string `json:"address"`
	Type     string `json:"type"` // static, dynamic
	Project  string `json:"project"`
}

// Leases returns the DHCP leases of a managed network: one cheap call that tells the
// address of every instance on it (a state call per instance costs incusd much more).
func (c *Client) Leases(ctx context.Context, network string) ([]Lease, error) {
	var out []Lease
	if _, err := c.get(ctx, "/networks/"+url.PathEscape(network)+"/leases", nil, &out); err != nil {
		return nil, fmt.Errorf("network %q: leases: %w", network, err)
	}
	return out, nil
}

// ProfileNetwork is the managed network of the profile's NIC named iface, or "".
func (p *Profile) ProfileNetwork(iface string) string {
	for name, d := range p.Devices {
		if d["type"] == "nic" && (d["name"] == iface || name == iface) && d["network"] != "" {
			return d["network"]
		}
	}
	return ""
}
