package incus

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
)

// WriteFile writes content to the file at abs inside the instance, replacing it
// (POST /1.0/instances/{name}/files?path=abs, with X-Incus-type: file,
// X-Incus-write: overwrite and the owner and mode in X-Incus-uid, X-Incus-gid,
// X-Incus-mode). A container need not be running: incusd writes into its root file
// system. A VM must be running with its agent up.
func (c *Client) WriteFile(ctx context.Context, name, abs string, content []byte, uid, gid int, mode fs.FileMode) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if !path.IsAbs(abs) || path.Clean(abs) != abs {
		return fmt.Errorf("instance %q: file path %q: want a clean absolute path", name, abs)
	}
	env, _, err := c.do(ctx, request{method: http.MethodPost, path: instPath(name) + "/files",
		query: url.Values{"path": {abs}}, raw: bytes.NewReader(content), contentType: "application/octet-stream",
		headers: map[string]string{
			"X-Incus-type":  "file",
			"X-Incus-write": "overwrite",
			"X-Incus-uid":   strconv.Itoa(uid),
			"X-Incus-gid":   strconv.Itoa(gid),
			"X-Incus-mode":  fmt.Sprintf("%04o", mode.Perm()),
		}})
	if err == nil && env.Type == "async" {
		_, err = c.wait(ctx, env)
	}
	if err != nil {
		return fmt.Errorf("instance %q: write %s: %w", name, abs, err)
	}
	return nil
}

// MachineIDPath is systemd's machine ID. Emptied, it is generated afresh at the next
// boot (a VM's from its own UUID), so a clone does not share its source's DHCP client
// identity (systemd-networkd's DUID is derived from it).
const MachineIDPath = "/etc/machine-id"

// ResetMachineID empties the instance's /etc/machine-id (root-owned, 0444, as Debian
// ships it).
func (c *Client) ResetMachineID(ctx context.Context, name string) error {
	return c.WriteFile(ctx, name, MachineIDPath, nil, 0, 0, 0o444)
}
