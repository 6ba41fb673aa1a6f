package main

// A two-member Incus cluster for real: two lab incusd in two network namespaces joined
// by a veth on 192.0.2.0/24 (cluster.https_address on each end, a join token), box on
// the leader's socket. box new --target places a box on a member; box list shows where
// each box lives.

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/incuslab"
)

func TestClusterLive(t *testing.T) {
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
}
