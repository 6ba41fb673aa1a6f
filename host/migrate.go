package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

// ErrNotBox is returned for an instance box did not mint (no user.box=1, no
// user.claudebox=1): box never touches it.
var ErrNotBox = errors.New("not a box")

// MigrateOptions tune migrate-host.
type MigrateOptions struct {
	Name    string
	Profile string // default ProfileName
	// DNSName is looked up inside the box to prove DNS works (default example.com).
	DNSName string
	// Timeout bounds the wait for the address and DNS (default 90 s).
	Timeout time.Duration
	Logf    func(format string, args ...any)
}

// Migrate re-homes a box onto the current stack in a safe order, each step logged:
// tag it (user.box=1, user.box.user=claude for a legacy box) so it stays a box whatever
// happens next; stop it; make the placement profile its only profile and drop
// instance-level NICs (they would override the profile's); start it; verify an IPv4
// address on the bridge and DNS; only then drop the legacy tag. If a step fails the box
// keeps both tags and the error says where it stopped.
func Migrate(ctx context.Context, c *incus.Client, o MigrateOptions) error {
	prof := orDefault(o.Profile, ProfileName)
	dnsName := orDefault(o.DNSName, "example.com")
	if o.Timeout == 0 {
		o.Timeout = 90 * time.Second
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	inst, _, err := c.Instance(ctx, o.Name)
	if err != nil {
		return err
	}
	if !incus.IsBox(*inst) {
		return fmt.Errorf("instance %s: %w (no user.box=1 or user.claudebox=1): box never touches it", o.Name, ErrNotBox)
	}
	p, err := c.Profile(ctx, prof)
	if err != nil {
		return fmt.Errorf("%w (run box setup-host first)", err)
	}
	legacy := inst.Config[incus.KeyLegacy] == "1"
	if !legacy && slices.Equal(inst.Profiles, []string{prof}) && !hasNIC(inst.Devices) {
		logf("%s is already on the current stack (profile %s): nothing to do", o.Name, prof)
		return nil
	}

	set := map[string]string{incus.KeyBox: "1"}
	if inst.Config[incus.KeyUser] == "" {
		set[incus.KeyUser] = incus.UserOf(*inst)
	}
	if err := c.SetConfig(ctx, o.Name, set); err != nil {
		return err
	}
	logf("tagged %s: user.box=1, user.box.user=%s", o.Name, orDefault(inst.Config[incus.KeyUser], set[incus.KeyUser]))

	if inst.Running() {
		if err := c.Stop(ctx, o.Name, 30*time.Second, false); err != nil {
			if err := c.Stop(ctx, o.Name, 10*time.Second, true); err != nil {
				return fmt.Errorf("stop %s: %w", o.Name, err)
			}
		}
		logf("stopped %s", o.Name)
	}

	inst, etag, err := c.Instance(ctx, o.Name)
	if err != nil {
		return err
	}
	devices := maps.Clone(inst.Devices)
	var dropped []string
	for n, d := range devices {
		if d["type"] == "nic" {
			delete(devices, n)
			dropped = append(dropped, n)
		}
	}
	put := incus.InstancePut{
		Architecture: inst.Architecture, Config: maps.Clone(inst.Config), Devices: devices,
		Ephemeral: inst.Ephemeral, Profiles: []string{prof}, Stateful: inst.Stateful, Description: inst.Description,
	}
	if err := c.Update(ctx, o.Name, put, etag); err != nil {
		return fmt.Errorf("assign profile %s to %s: %w", prof, o.Name, err)
	}
	msg := fmt.Sprintf("profiles of %s: %s → %s", o.Name, strings.Join(inst.Profiles, ","), prof)
	if len(dropped) > 0 {
		slices.Sort(dropped)
		msg += "; instance NICs removed: " + strings.Join(dropped, ", ")
	}
	logf("%s", msg)

	if err := c.Start(ctx, o.Name); err != nil {
		return fmt.Errorf("start %s: %w", o.Name, err)
	}
	logf("started %s", o.Name)

	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ip, err := c.WaitIPv4(wctx, o.Name, "eth0")
	if err != nil {
		return fmt.Errorf("%s has no IPv4 address on eth0 (legacy tag kept): %w", o.Name, err)
	}
	if n, err := c.Network(ctx, p.Devices["eth0"]["network"]); err == nil {
		if sn, err := SubnetOf(n.Config["ipv4.address"]); err == nil {
			if a, err := netip.ParseAddr(ip); err != nil || !sn.Contains(a) {
				return fmt.Errorf("%s got %s, outside the bridge's subnet %s (legacy tag kept)", o.Name, ip, sn)
			}
		}
	}
	logf("%s has address %s", o.Name, ip)
	var out bytes.Buffer
	for {
		out.Reset()
		code, err := c.Exec(wctx, o.Name, incus.Exec{Command: []string{"getent", "hosts", dnsName}, Stdout: &out})
		if err == nil && code == 0 {
			break
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("%s cannot resolve %s (legacy tag kept)", o.Name, dnsName)
		case <-time.After(time.Second):
		}
	}
	logf("%s resolves %s: %s", o.Name, dnsName, strings.Join(strings.Fields(out.String()), " "))

	if legacy {
		if err := c.SetConfig(ctx, o.Name, nil, incus.KeyLegacy); err != nil {
			return err
		}
		logf("dropped the legacy tag user.claudebox from %s", o.Name)
	}
	return nil
}

func hasNIC(devs map[string]map[string]string) bool {
	for _, d := range devs {
		if d["type"] == "nic" {
			return true
		}
	}
	return false
}
