package incus

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Snapshot is the part of an instance snapshot box reads.
type Snapshot struct {
	Name         string                       `json:"name"`
	CreatedAt    time.Time                    `json:"created_at"`
	ExpiresAt    time.Time                    `json:"expires_at"`
	Stateful     bool                         `json:"stateful"`
	Config       map[string]string            `json:"config"`
	Devices      map[string]map[string]string `json:"devices"`
	Profiles     []string                     `json:"profiles"`
	Architecture string                       `json:"architecture"`
	Description  string                       `json:"description"`
}

// Snapshots lists the snapshots of an instance, oldest first (as Incus returns them).
func (c *Client) Snapshots(ctx context.Context, name string) ([]Snapshot, error) {
	var out []Snapshot
	if _, err := c.get(ctx, instPath(name)+"/snapshots", url.Values{"recursion": {"1"}}, &out); err != nil {
		return nil, fmt.Errorf("instance %q: list snapshots: %w", name, err)
	}
	return out, nil
}

// CreateSnapshot takes a snapshot (see SnapshotRequest) and waits for it.
func (c *Client) CreateSnapshot(ctx context.Context, name string, req SnapshotPost) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := ValidateSnapshotName(req.Name); err != nil {
		return err
	}
	if _, err := c.async(ctx, request{method: http.MethodPost, path: instPath(name) + "/snapshots", body: req}); err != nil {
		return fmt.Errorf("snapshot %q of instance %q: %w", req.Name, name, err)
	}
	return nil
}

// Restore rolls an instance back to a snapshot (see RestoreRequest).
func (c *Client) Restore(ctx context.Context, name string, req RestorePut) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := ValidateSnapshotName(req.Restore); err != nil {
		return err
	}
	if _, err := c.async(ctx, request{method: http.MethodPut, path: instPath(name), body: req}); err != nil {
		return fmt.Errorf("restore instance %q to snapshot %q: %w", name, req.Restore, err)
	}
	return nil
}

// DeleteSnapshot deletes one snapshot.
func (c *Client) DeleteSnapshot(ctx context.Context, name, snapshot string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if err := ValidateSnapshotName(snapshot); err != nil {
		return err
	}
	p := instPath(name) + "/snapshots/" + url.PathEscape(snapshot)
	if _, err := c.async(ctx, request{method: http.MethodDelete, path: p}); err != nil {
		return fmt.Errorf("delete snapshot %q of instance %q: %w", snapshot, name, err)
	}
	return nil
}
