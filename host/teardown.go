package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/backend/incus"
)

// ErrBoxesExist is returned by Teardown when boxes exist and Force is not set.
var ErrBoxesExist = errors.New("boxes exist")

// TeardownOptions tune teardown-host.
type TeardownOptions struct {
	Bridge string // default BridgeName
	// Force deletes the boxes (instances tagged user.box=1 or user.claudebox=1) first.
	// Instances box did not mint are never touched: one that uses the stack stops the
	// teardown.
	Force   bool
	UnitDir string         // default DefaultUnitDir
	Conn    *nftables.Conn // nil: nftables.New()
}

// Teardown removes what Setup made, and the legacy claudebox names: the profiles, the
// bridges, the ACLs, the nftables tables, the boot unit. It then checks that all of it
// is gone.
func Teardown(ctx context.Context, c *incus.Client, o TeardownOptions) ([]Step, error) {
	var steps []Step
	boxes, err := c.ListBoxes(ctx)
	if err != nil {
		return steps, err
	}
	if len(boxes) > 0 && !o.Force {
		names := make([]string, len(boxes))
		for i, b := range boxes {
			names[i] = b.Name
		}
		return steps, fmt.Errorf("%w: %s", ErrBoxesExist, strings.Join(names, ", "))
	}
	br := orDefault(o.Bridge, BridgeName)
	profiles := []string{ProfileName, LegacyProfile}
	networks := []string{br, LegacyBridge}
	acls := []string{ACLName, LegacyACL}

	// Every precondition before anything is deleted: an instance box did not mint that
	// uses the stack is never touched, so it stops the teardown while every box is
	// still there (all or nothing).
	usedBy := map[string][]string{}
	for _, p := range profiles {
		pr, err := c.Profile(ctx, p)
		if err != nil && !incus.IsNotFound(err) {
			return steps, err
		} else if err == nil {
			usedBy["profile "+p] = pr.UsedBy
		}
	}
	for _, n := range networks {
		nw, err := c.Network(ctx, n)
		if err != nil && !incus.IsNotFound(err) {
			return steps, err
		} else if err == nil {
			usedBy["network "+n] = nw.UsedBy
		}
	}
	if foreign := ForeignUsers(usedBy, boxes, c.Project); len(foreign) > 0 {
		return steps, &ForeignError{Users: foreign}
	}

	for _, b := range boxes {
		if b.Running() {
			if err := c.Stop(ctx, b.Name, 10*time.Second, true); err != nil {
				return steps, err
			}
		}
		if err := c.Delete(ctx, b.Name); err != nil {
			return steps, err
		}
		steps = append(steps, Step{Object: "box " + b.Name, Outcome: Removed})
	}

	remove := func(kind, name string, del func(context.Context, string) error) error {
		err := del(ctx, name)
		switch {
		case incus.IsNotFound(err):
			steps = append(steps, Step{Object: kind + " " + name, Outcome: Absent})
			return nil
		case err != nil:
			return err
		}
		steps = append(steps, Step{Object: kind + " " + name, Outcome: Removed})
		return nil
	}
	// Profiles name networks, networks name ACLs: remove in that order.
	for _, p := range profiles {
		if err := remove("profile", p, c.RemoveProfile); err != nil {
			return steps, err
		}
	}
	for _, n := range networks {
		if err := remove("network", n, c.DeleteNetwork); err != nil {
			return steps, err
		}
	}
	for _, a := range acls {
		if err := remove("network ACL", a, c.DeleteNetworkACL); err != nil {
			return steps, err
		}
	}

	conn := o.Conn
	if conn == nil {
		if conn, err = nftables.New(); err != nil {
			return steps, err
		}
	}
	had := FirewallTables(conn)
	if err := Remove(conn); err != nil {
		return steps, err
	}
	if err := RemoveLegacyTable(conn); err != nil {
		return steps, err
	}
	for _, t := range []string{"bridge " + TableName, "inet " + TableName, "inet " + LegacyTable} {
		out := Absent
		if slices.Contains(had, t) {
			out = Removed
		}
		steps = append(steps, Step{Object: "nftables " + t, Outcome: out})
	}

	unitDir := orDefault(o.UnitDir, DefaultUnitDir)
	for _, f := range []string{UnitWants(unitDir), filepath.Join(unitDir, UnitName), filepath.Join(unitDir, "claudebox-firewall.service")} {
		err := os.Remove(f)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if !strings.Contains(f, ".wants") {
				steps = append(steps, Step{Object: "boot unit " + f, Outcome: Absent})
			}
		case err != nil:
			return steps, err
		default:
			if !strings.Contains(f, ".wants") {
				steps = append(steps, Step{Object: "boot unit " + f, Outcome: Removed})
			}
		}
	}
	return steps, Leftovers(ctx, c, conn, br, unitDir)
}

// ForeignError names the instances box did not mint that use the stack.
type ForeignError struct{ Users []string }

func (e *ForeignError) Error() string {
	return fmt.Sprintf("instances box did not mint use the stack: %s; box never touches them, so nothing was removed", strings.Join(e.Users, ", "))
}

// Hint says how to go on.
func (e *ForeignError) Hint() string {
	return "move them off the stack (or delete them with incus), then re-run"
}

// ForeignUsers lists, as "NAME (profile P)", the instances in usedBy (what each stack
// object's used_by says, keyed by "profile P" or "network N") that are not among boxes.
// A box's snapshots count as the box; an instance of another project is never a box of
// this one. project is the client's ("" is the default project).
func ForeignUsers(usedBy map[string][]string, boxes []incus.Instance, project string) []string {
	if project == "" {
		project = "default"
	}
	mine := map[string]bool{}
	for _, b := range boxes {
		mine[b.Name] = true
	}
	var out []string
	seen := map[string]bool{}
	objs := make([]string, 0, len(usedBy))
	for o := range usedBy {
		objs = append(objs, o)
	}
	slices.Sort(objs)
	for _, obj := range objs {
		for _, u := range usedBy[obj] {
			name, proj, ok := usedInstance(u)
			if !ok || (proj == project && mine[name]) {
				continue
			}
			label := name
			if proj != project {
				label = proj + "/" + name
			}
			if k := label + obj; !seen[k] {
				seen[k] = true
				out = append(out, fmt.Sprintf("%s (%s)", label, obj))
			}
		}
	}
	return out
}

// usedInstance reads a used_by URL, /1.0/instances/NAME[/snapshots/SNAP][?project=P]:
// the instance, its project, and whether it is an instance at all.
func usedInstance(u string) (name, project string, ok bool) {
	path, query, _ := strings.Cut(u, "?")
	rest, ok := strings.CutPrefix(path, "/1.0/instances/")
	if !ok || rest == "" {
		return "", "", false
	}
	name, _, _ = strings.Cut(rest, "/")
	project = "default"
	if q, err := url.ParseQuery(query); err == nil && q.Get("project") != "" {
		project = q.Get("project")
	}
	if n, err := url.PathUnescape(name); err == nil {
		name = n
	}
	return name, project, true
}

// Leftovers checks that nothing of the stack (current or legacy) is left.
func Leftovers(ctx context.Context, c *incus.Client, conn *nftables.Conn, bridge, unitDir string) error {
	var left []string
	for _, p := range []string{ProfileName, LegacyProfile} {
		if _, err := c.Profile(ctx, p); !incus.IsNotFound(err) {
			left = append(left, "profile "+p)
		}
	}
	for _, n := range []string{bridge, LegacyBridge} {
		if _, err := c.Network(ctx, n); !incus.IsNotFound(err) {
			left = append(left, "network "+n)
		}
	}
	for _, a := range []string{ACLName, LegacyACL} {
		if _, err := c.NetworkACLByName(ctx, a); !incus.IsNotFound(err) {
			left = append(left, "network ACL "+a)
		}
	}
	for _, t := range FirewallTables(conn) {
		left = append(left, "nftables table "+t)
	}
	for _, f := range []string{filepath.Join(unitDir, UnitName), UnitWants(unitDir)} {
		if _, err := os.Lstat(f); err == nil {
			left = append(left, f)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("teardown left: %s", strings.Join(left, ", "))
	}
	return nil
}

// FirewallTables lists the box and legacy tables present, as "family name".
func FirewallTables(conn *nftables.Conn) []string {
	var out []string
	ts, err := conn.ListTables()
	if err != nil {
		return []string{"(cannot list tables: " + err.Error() + ")"}
	}
	for _, t := range ts {
		fam := map[nftables.TableFamily]string{nftables.TableFamilyBridge: "bridge", nftables.TableFamilyINet: "inet"}[t.Family]
		if fam == "" {
			continue
		}
		if t.Name == TableName || (t.Name == LegacyTable && fam == "inet") {
			out = append(out, fam+" "+t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// RemoveLegacyTable deletes claudebox's table inet claudebox, if present.
func RemoveLegacyTable(conn *nftables.Conn) error {
	deleteTable(conn, &nftables.Table{Family: nftables.TableFamilyINet, Name: LegacyTable})
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("remove table inet %s: %w", LegacyTable, err)
	}
	return nil
}

// ForeignInstances names the instances of c that box did not mint: they would outlive a
// purge of the Incus package, so teardown-host --purge-incus refuses (before it deletes
// a box).
func ForeignInstances(ctx context.Context, c *incus.Client) ([]string, error) {
	all, err := c.ListInstances(ctx)
	if err != nil {
		return nil, err
	}
	return NotBoxes(all), nil
}

// NotBoxes names the instances that are not boxes.
func NotBoxes(all []incus.Instance) []string {
	var out []string
	for _, i := range all {
		if !incus.IsBox(i) {
			out = append(out, i.Name)
		}
	}
	return out
}

// PurgeIncus removes the Incus package (apt-get purge, its output to out) and the system
// daemon's socket it leaves behind.
func PurgeIncus(out io.Writer) error {
	cmd := exec.Command("apt-get", "purge", "-y", "incus", "incus-client")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apt-get purge incus: %w", err)
	}
	_ = os.Remove(incus.DefaultSocket)
	return nil
}
