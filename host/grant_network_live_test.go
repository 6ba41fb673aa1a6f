package host_test

// What else a granted user could ask incusd for, past the instance: objects of the
// network (forwards that open a host address to a box, ACLs, zones, another network),
// the trust store (a token for a new certificate), the server's config, storage, and what
// of the operator's objects and activity her lists show.

import (
	"os"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestGrantNetworkObjectsLive(t *testing.T) {
	if _, err := os.Stat(incuslab.IncusUser); err != nil {
		testenv.Skip(t, "requires incus-user ("+incuslab.IncusUser+", package incus-base): run scripts/incus-install.sh")
	}
	lab := incuslab.Start(t)
	r := newVMRigOn(t, lab)
	testenv.Group(t, grantGroup)
	sock, stop, err := lab.StartIncusUser(r.ctx, grantGroup)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	alice := newTenant(t, r, testenv.UserName, sock)
	// incusd listening on the network (in the lab's namespace), as on a host that is also
	// a remote: where a trust token could be issued at all.
	if out, err := lab.Incus("config", "set", "core.https_address", "127.0.0.1:8443").CombinedOutput(); err != nil {
		t.Fatalf("incus config set core.https_address: %v: %s", err, out)
	}
	// An ACL of the operator's, in the default project (as box-isolate is).
	if out, err := lab.Incus("network", "acl", "create", "opsacl").CombinedOutput(); err != nil {
		t.Fatalf("incus network acl create opsacl: %v: %s", err, out)
	}
	grantOK(t, r, alice.name)
	p := alice.project()
	net := incuslab.Network
	for _, args := range [][]string{
		{"network", "forward", "create", "--project", p, net, "192.0.2.77", "target_address=10.211.7.50"},
		{"network", "forward", "create", "--project", "default", net, "192.0.2.78", "target_address=10.211.7.50"},
		{"network", "acl", "create", "--project", "default", "evil2"},
		{"network", "zone", "create", "--project", p, "evil.example"},
		{"network", "create", "--project", p, "evilbr0"},
		{"config", "trust", "add", "--project", p, "evil-client"},
		{"config", "trust", "add", "evil-client2"},
		{"config", "set", "core.https_address", "127.0.0.1:9443"},
		{"storage", "create", "--project", p, "evilpool", "dir"},
		{"storage", "volume", "create", "--project", "default", incuslab.Pool, "evilvol"},
		{"profile", "create", "--project", "default", "evilprof"},
		{"project", "create", "evilproj"},
	} {
		out, ok := alice.incus(t, args...)
		if ok {
			t.Errorf("alice$ incus %v succeeded: %s", args, out)
		}
	}
	// The gap (host.md): with features.networks=false her project's network objects are
	// the default project's, and incusd lets her create an ACL there. She cannot read,
	// change or delete the operator's, below.
	if out, ok := alice.incus(t, "network", "acl", "create", "--project", p, "tenantacl"); ok {
		out, _ := lab.Incus("network", "acl", "list", "--project", "default", "--format", "csv").CombinedOutput()
		t.Logf("the known gap: alice's ACL is in the default project:\n%s", out)
	} else {
		t.Logf("alice$ incus network acl create: refused now (%s): host.md's address of the gap is out of date", out)
	}
	for _, args := range [][]string{
		{"network", "acl", "show", "--project", p, "opsacl"},
		{"network", "acl", "rule", "add", "--project", p, "opsacl", "egress", "action=allow", "destination=10.0.0.0/8"},
		{"network", "acl", "delete", "--project", p, "opsacl"},
	} {
		if out, ok := alice.incus(t, args...); ok {
			t.Errorf("alice$ incus %v succeeded: %s", args, out)
		}
	}
	for _, proj := range []string{"default", p} {
		out, _ := lab.Incus("network", "acl", "list", "--project", proj, "--format", "csv").CombinedOutput()
		t.Logf("operator$ incus network acl list --project %s:\n%s", proj, out)
	}
	out, _ := lab.Incus("network", "acl", "show", "opsacl").CombinedOutput()
	if !strings.Contains(string(out), "egress: []") {
		t.Errorf("the operator's ACL after alice's tries:\n%s", out)
	}
	// What the API lets her see of others: each list must be hers alone.
	for _, args := range [][]string{
		{"operation", "list", "--all-projects", "--format", "csv"},
		{"config", "trust", "list", "--format", "csv"},
		{"network", "list-leases", net, "--format", "csv"},
		{"storage", "volume", "list", incuslab.Pool, "--all-projects", "--format", "csv"},
		{"network", "acl", "list", "--all-projects", "--format", "csv"},
	} {
		out, _ := alice.incus(t, args...)
		for _, other := range []string{"opsacl", "incuslab", "payroll"} {
			if strings.Contains(out, other) {
				t.Errorf("alice$ incus %s shows the operator's %s:\n%s", strings.Join(args, " "), other, out)
			}
		}
	}
}
