package drill

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/policy"
)

// fullPlans are plans of every tier with every optional input set, so every group
// BuildPlan knows has rows in at least one of them.
func fullPlans(t *testing.T) []Plan {
	t.Helper()
	var out []Plan
	for _, tier := range []policy.Tier{TierNone, TierInternet, TierFull, TierAllowlist} {
		in := input()
		in.Tier = tier
		in.Limits = Limits{Pids: 100, Memory: 1 << 30, Tmpfs: []TmpfsBound{{Path: "/tmp", Size: 1 << 20}}}
		p, err := BuildPlan(in)
		if err != nil {
			t.Fatalf("tier %s: %v", tier, err)
		}
		out = append(out, p)
	}
	return out
}

// TestBwrapGroupsCatalogue: every group a bwrap drill row can have is one --group can
// name, and every name --group takes is a group some row has (no stale name).
func TestBwrapGroupsCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range fullPlans(t) {
		for _, pr := range p.Probes {
			seen[pr.Group] = true
		}
	}
	for _, pr := range DevShellProbes([]envaudit.Var{{Name: "IN_NIX_SHELL", Origin: "devshell"}}) {
		seen[pr.Group] = true
	}
	// Rows added outside BuildPlan: the ports rows (publish.go), the ssh rows
	// (sshagent.go), the trust row (trust.go), the Landlock mode's (harden.go).
	for _, g := range []string{portsGroup, "ssh", "trust", "kernel"} {
		seen[g] = true
	}
	for g := range seen {
		if !slices.Contains(BwrapGroups, g) {
			t.Errorf("rows of group %q, which --group cannot name", g)
		}
	}
	for _, g := range BwrapGroups {
		if !seen[g] {
			t.Errorf("--group takes %q, which no row has", g)
		}
	}
}

func TestSelectGroupsRefusesUnknown(t *testing.T) {
	for _, names := range [][]string{{"nope"}, {"ssh", "nope"}, {"ssh,nope"}, {""}, {"ssh,"}, {"SSH"}} {
		_, err := SelectGroups(names)
		var u *UnknownGroupError
		if !errors.As(err, &u) {
			t.Errorf("%q: err %v, want an UnknownGroupError", names, err)
			continue
		}
		if !strings.Contains(err.Error(), "ssh, trust") {
			t.Errorf("%q: %q does not list the groups", names, err)
		}
	}
}

func TestGroupsFilter(t *testing.T) {
	all, err := SelectGroups(nil)
	if err != nil || len(all.LeftOut()) != 0 || !all.Keep("network") {
		t.Fatalf("no --group: %v, left out %v", err, all.LeftOut())
	}
	g, err := SelectGroups([]string{"network,ssh", "network", "trust"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range fullPlans(t) {
		if n := len(all.Probes(p.Probes)); n != len(p.Probes) {
			t.Errorf("all groups kept %d of %d probes", n, len(p.Probes))
		}
		kept := g.Probes(p.Probes)
		if len(kept) == 0 {
			t.Fatal("no network probe kept")
		}
		for _, pr := range kept {
			if pr.Group != "network" {
				t.Errorf("probe %s of group %s kept", pr.ID, pr.Group)
			}
		}
		want := 0
		for _, pr := range p.Probes {
			if pr.Group == "network" {
				want++
			}
		}
		if len(kept) != want {
			t.Errorf("kept %d network probes of %d", len(kept), want)
		}
	}
	rs := []Result{{ID: "net:host", Group: "network"}, {ID: TrustRowID, Group: "trust"}, {ID: "secret:ssh", Group: "secrets"}, {ID: HardenTerminalID, Group: "kernel"}}
	got := g.Results(rs)
	if len(got) != 2 || got[0].ID != "net:host" || got[1].ID != TrustRowID {
		t.Errorf("results kept: %v", got)
	}
	if len(rs) != 4 {
		t.Errorf("Results changed its argument: %v", rs)
	}
	left := g.LeftOut()
	if len(left) != len(BwrapGroups)-3 || slices.Contains(left, "ssh") || !slices.Contains(left, "secrets") || !slices.Contains(left, "kernel") {
		t.Errorf("left out: %v", left)
	}
	if e := g.Empty(got); !slices.Equal(e, []string{"ssh"}) {
		t.Errorf("chosen groups without rows: %v, want [ssh]", e)
	}
}
