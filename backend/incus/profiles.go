package incus

import (
	"context"
	"errors"
	"fmt"
	"net/url"
)

// Profile is the part of an Incus profile box reads.
type Profile struct {
	Name        string                       `json:"name"`
	Description string                       `json:"description"`
	Config      map[string]string            `json:"config"`
	Devices     map[string]map[string]string `json:"devices"`
	UsedBy      []string                     `json:"used_by"`
}

// Profile returns one profile.
func (c *Client) Profile(ctx context.Context, name string) (*Profile, error) {
	var p Profile
	if _, err := c.get(ctx, "/profiles/"+url.PathEscape(name), nil, &p); err != nil {
		return nil, fmt.Errorf("profile %q: %w", name, err)
	}
	return &p, nil
}

// RootPool returns the storage pool of the profile's root disk: a mint that overrides
// the root disk size must name it (an instance device replaces the profile's whole).
func (c *Client) RootPool(ctx context.Context, profile string) (string, error) {
	p, err := c.Profile(ctx, profile)
	if err != nil {
		return "", err
	}
	for _, d := range p.Devices {
		if d["type"] == "disk" && d["path"] == "/" && d["pool"] != "" {
			return d["pool"], nil
		}
	}
	return "", fmt.Errorf("profile %q: %w", profile, errors.New("no root disk device with a pool"))
}

// PoolDriver returns the storage driver of a pool (dir, btrfs, zfs, lvm, ...).
func (c *Client) PoolDriver(ctx context.Context, pool string) (string, error) {
	var p struct {
		Driver string `json:"driver"`
	}
	if _, err := c.get(ctx, "/storage-pools/"+url.PathEscape(pool), nil, &p); err != nil {
		return "", fmt.Errorf("storage pool %q: %w", pool, err)
	}
	return p.Driver, nil
}
