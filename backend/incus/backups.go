package incus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// BackupsPost is the body of POST /1.0/instances/{name}/backups: an instance backup,
// made by incusd in its own storage, fetched with ExportBackup.
type BackupsPost struct {
	Name                 string    `json:"name"`
	ExpiresAt            time.Time `json:"expires_at"`
	InstanceOnly         bool      `json:"instance_only"`
	OptimizedStorage     bool      `json:"optimized_storage"`
	CompressionAlgorithm string    `json:"compression_algorithm,omitempty"`
}

func backupPath(name, backup string) string {
	return instPath(name) + "/backups/" + url.PathEscape(backup)
}

// CreateBackup makes a backup of an instance (and, unless InstanceOnly, its snapshots)
// and waits for it.
func (c *Client) CreateBackup(ctx context.Context, name string, req BackupsPost) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if _, err := c.async(ctx, request{method: http.MethodPost, path: instPath(name) + "/backups", body: req}); err != nil {
		return fmt.Errorf("back up instance %q: %w", name, err)
	}
	return nil
}

// DeleteBackup deletes a backup from incusd's storage.
func (c *Client) DeleteBackup(ctx context.Context, name, backup string) error {
	if _, err := c.async(ctx, request{method: http.MethodDelete, path: backupPath(name, backup)}); err != nil {
		return fmt.Errorf("delete backup %q of instance %q: %w", backup, name, err)
	}
	return nil
}

// ExportBackup streams a backup's tarball (GET .../backups/{backup}/export) into w
// without holding it in memory, and returns the bytes written.
func (c *Client) ExportBackup(ctx context.Context, name, backup string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(backupPath(name, backup)+"/export", nil), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "box")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("incus socket %s: %w (is incusd running?)", c.socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var e envelope
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return 0, fmt.Errorf("export backup %q of instance %q: %w", backup, name, &Error{Status: resp.StatusCode, Message: e.Error})
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		return n, fmt.Errorf("export backup %q of instance %q: %w", backup, name, err)
	}
	return n, nil
}

// ImportBackup creates an instance from a backup tarball streamed from r (POST
// /1.0/instances, Content-Type application/octet-stream), named name (X-Incus-name;
// "" keeps the backup's) on pool (X-Incus-pool; "" keeps the backup's), and waits for
// it. incusd spools the upload to a temporary file and creates nothing until the whole
// body arrived: an upload cut short leaves no instance.
func (c *Client) ImportBackup(ctx context.Context, r io.Reader, name, pool string) error {
	h := map[string]string{}
	if name != "" {
		if err := ValidateName(name); err != nil {
			return err
		}
		h["X-Incus-name"] = name
	}
	if pool != "" {
		h["X-Incus-pool"] = pool
	}
	if _, err := c.async(ctx, request{method: http.MethodPost, path: "/instances", raw: r, contentType: "application/octet-stream", headers: h}); err != nil {
		return fmt.Errorf("import instance %q: %w", name, err)
	}
	return nil
}
