package drill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

var protectIDs = []string{"protect:hook", "protect:fsmonitor", "protect:hookspath", "protect:nested-config",
	"protect:worktree-pointer", "protect:envrc", "protect:vscode-task", "protect:agent-settings", "protect:rebase-exec", "protect:home-link", "protect:hook-link"}

func TestBuildPlanProtect(t *testing.T) {
	in := input()
	p, _ := BuildPlan(in)
	for _, id := range protectIDs {
		if pr := probe(t, p, id); pr.Skip != "no fixture" {
			t.Errorf("%s without a fixture: skip %q", id, pr.Skip)
		}
	}
	in.Fixture = &Fixture{Dir: "/w/.box-drill-fixture-n0", Repo: "/w/f/repo", RepoGit: "/w/f/gitdirs/repo", Nested: "/w/f/repo/nested",
		Hp: "/w/f/repo/hp", HpGit: "/w/f/gitdirs/hp", Wt: "/w/f/repo/wt",
		Markers: "/tmp/m", Orig: map[string]string{"/w/f/repo/.envrc": "export X=1\n"},
		Commit: "4bdfc6c65896e72a6bfbea9c5b9eb1c616026314", Dotfile: "/w/f/dotfiles/rc", HomeLink: "/h/.box-drill-fixture-n0-rc"}
	in.Facts.Git = "/usr/bin/git"
	in.Dropped = []string{".vscode"}
	p, _ = BuildPlan(in)
	for _, id := range protectIDs {
		pr := probe(t, p, id)
		if pr.Skip != "" || pr.Want != Blocked || len(pr.Plant) == 0 || pr.Host == "" || !strings.HasPrefix(pr.Marker, "/tmp/m/") {
			t.Errorf("%s: %+v", id, pr)
		}
		// The planted command makes exactly this probe's marker.
		if !strings.Contains(pr.Plant[len(pr.Plant)-1].Content+pr.Plant[0].Content, pr.Marker) {
			t.Errorf("%s: no plant names the marker %s", id, pr.Marker)
		}
	}
	if pr := probe(t, p, "protect:envrc"); pr.Original != "export X=1\n" {
		t.Errorf("original %q", pr.Original)
	}
	if pr := probe(t, p, "protect:drop:.vscode"); pr.Want != Allowed || pr.Kind != KindLoosened {
		t.Errorf("drop row %+v", pr)
	}
	in.Facts.Git = ""
	p, _ = BuildPlan(in)
	if pr := probe(t, p, "protect:fsmonitor"); pr.Skip != "git not on the host" {
		t.Errorf("without git: %q", pr.Skip)
	}
	if pr := probe(t, p, "protect:envrc"); pr.Skip != "" {
		t.Errorf("envrc needs no git: %q", pr.Skip)
	}
}

// Outside any sandbox (nothing protects the fixture), every plant lands and Settle's
// host actions run it: BREACH for each class, which is what the protect rows mean.
func TestProtectProbesUnsandboxed(t *testing.T) {
	git := testenv.RequireTool(t, "git")
	wd := t.TempDir()
	fx, err := MakeFixture(wd, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer fx.Remove()
	home := t.TempDir()
	if err := fx.LinkHome(home); err != nil {
		t.Fatal(err)
	}
	in := input()
	in.Workdir, in.Fixture, in.Facts.Git = wd, fx, git
	p, _ := BuildPlan(in)
	var sub Plan
	for _, id := range protectIDs {
		sub.Probes = append(sub.Probes, probe(t, p, id))
	}
	res := Judge(sub, Settle(sub, RunPlan(sub)))
	for _, r := range res {
		if r.Status != Breach || !strings.Contains(r.Observed, "RAN IT") {
			t.Errorf("%s: %s %q, want BREACH with the host running it", r.ID, r.Status, r.Observed)
		}
	}
	// Someone else's change is reported and never run.
	os.WriteFile(filepath.Join(fx.Repo, ".envrc"), []byte("touch "+filepath.Join(fx.Markers, "other")+"\n"), 0o644)
	one := Plan{Probes: []Probe{probe(t, p, "protect:envrc")}}
	obs := Settle(one, []Observation{{ID: "protect:envrc"}})
	if !obs[0].OnHost || !strings.Contains(obs[0].Detail, "not run") {
		t.Errorf("%+v", obs[0])
	}
	if _, err := os.Stat(filepath.Join(fx.Markers, "other")); err == nil {
		t.Error("Settle ran a file that was not the drill's plant")
	}
	fx.Remove()
	if _, err := os.Stat(fx.Dir); err == nil {
		t.Error("fixture left behind")
	}
	if _, err := os.Lstat(fx.HomeLink); err == nil {
		t.Error("the home link left behind")
	}
}
