package vm_test

// A two-member Incus cluster for real: two lab incusd in two network namespaces joined
// by a veth on 192.0.2.0/24 (cluster.https_address on each end, a join token), box on
// the leader's socket. box new --target places a box on a member; box list shows where
// each box lives.

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/host"
)

func TestClusterLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	leader := incuslab.Start(t)
	member := incuslab.StartWith(t, incuslab.Options{Empty: true})
	// The leader goes first: a member's shutdown does not wait for a leader that went.
	t.Cleanup(func() { _ = leader.Close() })
	r := newVMRigOn(t, leader)
	if err := leader.Link(r.ctx, member, "192.0.2.1/24", "192.0.2.2/24"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := incuslab.JoinCluster(r.ctx, leader, "m1", "192.0.2.1:8443", member, "m2", "192.0.2.2:8443"); err != nil {
		t.Fatal(err)
	}
	t.Logf("a cluster of two in %s", time.Since(start).Round(time.Millisecond))

	t.Run("new --target places the box on that member", func(t *testing.T) {
		r.ok(t, "new", "--name", "west", "--container", "--target", "m2")
		r.ok(t, "new", "--name", "east", "--container", "--target", "m1")
		for name, want := range map[string]string{"west": "m2", "east": "m1"} {
			inst, _, err := r.client.Instance(r.ctx, name)
			if err != nil || inst.Location != want {
				t.Errorf("%s: location %q (%v), want %s", name, inst.Location, err, want)
			}
		}
		// exec reaches the box on the other member (incusd forwards it).
		r.rootExec("west", "useradd", "--create-home", "dev")
		if res := r.ok(t, "exec", "west", "--", "hostname"); res.stdout != "west\n" {
			t.Errorf("exec west: %q", res.stdout)
		}
	})

	t.Run("list shows where each box lives", func(t *testing.T) {
		table := r.ok(t, "list").stdout
		lines := strings.Split(strings.TrimSpace(table), "\n")
		if len(lines) != 3 || !strings.HasSuffix(strings.TrimSpace(lines[0]), "LOCATION") ||
			!strings.HasSuffix(strings.TrimSpace(lines[1]), "m1") || !strings.HasSuffix(strings.TrimSpace(lines[2]), "m2") {
			t.Errorf("box list:\n%s", table)
		}
		if out := r.ok(t, "info", "west").stdout; !regexp.MustCompile(`(?m)^location: +m2$`).MatchString(out) {
			t.Errorf("info west:\n%s", out)
		}
		if info := r.info(t, "west"); info.Location != "m2" {
			t.Errorf("info west --json: location %q", info.Location)
		}
		var list []boxJSON
		if err := json.Unmarshal([]byte(r.ok(t, "list", "--json").stdout), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].Location != "m1" || list[1].Location != "m2" {
			t.Errorf("list --json: %+v", list)
		}
	})

	t.Run("an unknown member is refused and leaves nothing", func(t *testing.T) {
		r.fails(t, 1, []string{"nowhere"}, "new", "--name", "lost", "--container", "--target", "nowhere")
		if r.exists("lost") {
			t.Error("a box was left by the refused placement")
		}
	})

	t.Run("rm on either member", func(t *testing.T) {
		r.ok(t, "rm", "west", "--force")
		r.ok(t, "rm", "east", "--force")
		if r.exists("west") || r.exists("east") {
			t.Error("rm left a box")
		}
	})

	// setup-host on a cluster: the network is defined on every member, then created
	// cluster-wide; the ACL and the profile are cluster-wide; the firewall is applied in
	// this member's host (the leader's namespace) and every other member is named with
	// the command that applies it there. box runs in the leader's namespace, with its
	// own sysfs, as on that host.
	t.Run("setup-host builds the stack cluster-wide and names each member's firewall", func(t *testing.T) {
		units := t.TempDir()
		onLeader := func(args ...string) result {
			t.Helper()
			argv := append([]string{"-m", "--propagation", "private", "nsenter", "--net=" + leader.NetNS,
				"sh", "-c", `mount -t sysfs sysfs /sys && exec "$@"`, "sh", r.box}, args...)
			c := exec.Command("unshare", argv...)
			c.Env, c.Dir = r.env, r.home
			res := runResult(t, c)
			t.Logf("box %s (leader's host): exit %d\n%s%s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
			return res
		}
		res := onLeader("setup-host", "--resolver", "203.0.113.10", "--unit-dir", units)
		out := res.stdout + res.stderr
		if res.code != 0 {
			t.Fatalf("setup-host on the cluster: exit %d", res.code)
		}
		for _, want := range []string{"on every member (m1, m2)", "nftables on member m2", "not applied here", "run 'box setup-host' as root on member m2"} {
			if !strings.Contains(out, want) {
				t.Errorf("setup-host lacks %q", want)
			}
		}
		if strings.Contains(out, "nftables on member m1") {
			t.Error("setup-host names its own member's firewall as not applied")
		}
		for _, m := range []string{"m1", "m2"} {
			n, err := r.client.NetworkOn(r.ctx, host.BridgeName, m)
			if err != nil || n.Status != "Created" {
				t.Errorf("network %s on %s: %+v %v", host.BridgeName, m, n, err)
			}
		}
		// The firewall is where box ran, and only there.
		if out, err := leader.InNetNS("nft", "list", "table", "inet", "box").CombinedOutput(); err != nil {
			t.Errorf("no inet box table on the leader's host: %v %s", err, out)
		}
		if err := member.InNetNS("nft", "list", "table", "inet", "box").Run(); err == nil {
			t.Error("the other member's host got a firewall it was not given")
		}
		// A box on the stack's profile, on the other member, gets its lease there.
		saved := r.env
		r.env = append(append([]string{}, saved...), "BOX_PLACEMENT_PROFILE="+host.ProfileName)
		r.ok(t, "new", "--name", "stacked", "--container", "--target", "m2")
		r.env = saved
		inst, _, err := r.client.Instance(r.ctx, "stacked")
		if err != nil || inst.Location != "m2" || !reflect.DeepEqual(inst.Profiles, []string{host.ProfileName}) {
			t.Errorf("stacked: %+v %v: want m2, on %s only", inst, err, host.ProfileName)
		}
		doc := onLeader("doctor", "--unit-dir", units)
		for _, want := range []string{"ok    cluster members", "warn  firewall on member m2", "ok    firewall"} {
			if !strings.Contains(doc.stdout, want) {
				t.Errorf("doctor lacks %q", want)
			}
		}
		r.ok(t, "rm", "stacked", "--force")
	})
}
