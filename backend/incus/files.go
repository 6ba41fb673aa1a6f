package incus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// WriteFile writes content to the file at abs inside the instance, replacing it
// (POST /1.0/instances/{name}/files?path=abs, with X-Incus-type: file,
// X-Incus-write: overwrite and the owner and mode in X-Incus-uid, X-Incus-gid,
// X-Incus-mode). A container need not be running: incusd writes into its root file
// system. A VM must be running with its agent up.
func (c *Client) WriteFile(ctx context.Context, name, abs string, content []byte, uid, gid int, mode fs.FileMode) error {
	if err := checkFilePath(name, abs); err != nil {
		return err
	}
	var err error
	// A whole overwrite is idempotent: a daemon that hung up before a byte of answer
	// (a CI run met one mid-push, once in many) is asked again, once.
	for try := 0; try < 2; try++ {
		var env *response
		env, _, err = c.do(ctx, request{method: http.MethodPost, path: instPath(name) + "/files",
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
		if !errors.Is(err, ErrHungUp) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("instance %q: write %s: %w", name, abs, err)
	}
	return nil
}

// DeleteFile removes the file (or symlink, or empty directory) at abs inside the
// instance (DELETE /1.0/instances/{name}/files?path=abs). A missing file is an *Error
// with status 404 (IsNotFound).
func (c *Client) DeleteFile(ctx context.Context, name, abs string) error {
	if err := checkFilePath(name, abs); err != nil {
		return err
	}
	env, _, err := c.do(ctx, request{method: http.MethodDelete, path: instPath(name) + "/files", query: url.Values{"path": {abs}}})
	if err == nil && env.Type == "async" {
		_, err = c.wait(ctx, env)
	}
	if err != nil {
		return fmt.Errorf("instance %q: delete %s: %w", name, abs, err)
	}
	return nil
}

// Symlink makes abs inside the instance a symlink to target (X-Incus-type: symlink);
// abs must not exist.
func (c *Client) Symlink(ctx context.Context, name, abs, target string) error {
	if err := checkFilePath(name, abs); err != nil {
		return err
	}
	env, _, err := c.do(ctx, request{method: http.MethodPost, path: instPath(name) + "/files",
		query: url.Values{"path": {abs}}, raw: strings.NewReader(target), contentType: "application/octet-stream",
		headers: map[string]string{"X-Incus-type": "symlink", "X-Incus-uid": "0", "X-Incus-gid": "0"}})
	if err == nil && env.Type == "async" {
		_, err = c.wait(ctx, env)
	}
	if err != nil {
		return fmt.Errorf("instance %q: symlink %s -> %s: %w", name, abs, target, err)
	}
	return nil
}

func checkFilePath(name, abs string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if !path.IsAbs(abs) || path.Clean(abs) != abs {
		return fmt.Errorf("instance %q: file path %q: want a clean absolute path", name, abs)
	}
	return nil
}

// MachineIDPath is systemd's machine ID. Emptied, it is generated afresh at the next
// boot (a VM's from its own UUID), so a clone does not share its source's DHCP client
// identity (systemd-networkd's DUID is derived from it).
const MachineIDPath = "/etc/machine-id"

// DBusMachineIDPath is the second copy Debian's images keep: dbus's postinst writes it
// as a regular file, and systemd, finding /etc/machine-id empty, restores the ID from it
// at boot (it skips a symlink). Emptying /etc/machine-id alone keeps the old ID there.
const DBusMachineIDPath = "/var/lib/dbus/machine-id"

// ResetMachineID resets every copy of the machine ID an image keeps: it empties
// /etc/machine-id (root-owned, 0444, as Debian ships it) and replaces
// /var/lib/dbus/machine-id, when there is one, by a symlink to it (what Debian's
// tmpfiles.d makes, and what systemd skips), so systemd generates a fresh ID at the next
// boot.
func (c *Client) ResetMachineID(ctx context.Context, name string) error {
	if err := c.WriteFile(ctx, name, MachineIDPath, nil, 0, 0, 0o444); err != nil {
		return err
	}
	err := c.DeleteFile(ctx, name, DBusMachineIDPath)
	if IsNotFound(err) {
		return nil // an image without the dbus copy
	}
	if err != nil {
		return err
	}
	return c.Symlink(ctx, name, DBusMachineIDPath, MachineIDPath)
}
