package drill

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
	"github.com/heavy-duty/box/policy"
)

var protectIDs = []string{"protect:hook", "protect:fsmonitor", "protect:hookspath", "protect:nested-config",
	"protect:worktree-pointer", "protect:envrc", "protect:vscode-task", "protect:agent-settings", "protect:rebase-exec", "protect:home-link", "protect:hook-link",
	"protect:home-dotdir-link", "protect:home-missing-link", "protect:subdir-agent-settings"}

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
		Commit: "4bdfc6c65896e72a6bfbea9c5b9eb1c616026314", Dotfile: "/w/f/dotfiles/rc", HomeLink: "/h/.box-drill-fixture-n0-rc",
		DotdirFile: "/w/f/dotfiles/dotdir-rc", DotdirLink: "/h/.box-drill-fixture-n0.d/rc",
		MissingFile: "/w/f/dotfiles/missing/rc", MissingLink: "/h/.box-drill-fixture-n0-rc-missing"}
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
	// The rows derived from the entries: unsandboxed, every plant lands and stays, or
	// the host's git runs it: BREACH.
	var derived Plan
	for _, pr := range p.Probes {
		if strings.HasPrefix(pr.ID, "protect:entry:") {
			derived.Probes = append(derived.Probes, pr)
		}
	}
	if len(derived.Probes) < len(policy.ProtectEntries())-len(attackProbes) {
		t.Fatalf("%d derived rows for %d entries", len(derived.Probes), len(policy.ProtectEntries()))
	}
	for _, r := range Judge(derived, Settle(derived, RunPlan(derived))) {
		if r.Status != Breach {
			t.Errorf("%s: %s %q, want BREACH unsandboxed", r.ID, r.Status, r.Observed)
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
	for _, l := range []string{fx.HomeLink, fx.DotdirLink, filepath.Dir(fx.DotdirLink), fx.MissingLink} {
		if _, err := os.Lstat(l); err == nil {
			t.Errorf("the home link %s left behind", l)
		}
	}
}

// Every protected entry has a drill row, derived from the entry itself where no attack
// row covers it: adding an entry (or a scope) without a probe fails here.
func TestEntryProbes(t *testing.T) {
	in := input()
	in.Fixture = &Fixture{Dir: "/w/.box-drill-fixture-n0", Repo: "/w/f/repo", RepoGit: "/w/f/gitdirs/repo", Nested: "/w/f/repo/nested",
		Hp: "/w/f/repo/hp", HpGit: "/w/f/gitdirs/hp", Wt: "/w/f/repo/wt", HpHooks: "/w/f/repo/hp/.githooks", HpInclude: "/w/f/repo/hp/.box-include",
		Markers: "/tmp/m", Orig: map[string]string{}, Commit: "4bdfc6c65896e72a6bfbea9c5b9eb1c616026314",
		Dotfile: "/w/f/dotfiles/rc", HomeLink: "/h/.box-drill-fixture-n0-rc"}
	in.Facts.Git = "/usr/bin/git"
	p, _ := BuildPlan(in)
	seen := map[string]bool{}
	for _, e := range policy.ProtectEntries() {
		id := EntryProbeID(e)
		if id == "" {
			t.Errorf("protected entry %s (scope %s) has no drill row: give it an attack row (attackProbes) or derive one (entryProbes)", e.Name, e.Scope)
			continue
		}
		pr := probe(t, p, id)
		if pr.Kind != KindPlant || pr.Want != Blocked || len(pr.Plant) == 0 || pr.Skip != "" {
			t.Errorf("%s: %+v", id, pr)
		}
		if strings.HasPrefix(id, "protect:entry:") && seen[id] {
			t.Errorf("%s: two entries derive one row", id)
		}
		seen[id] = true
	}
	if pr := probe(t, p, "protect:entry:.npmrc"); !pr.AuditOnly || pr.Plant[0].Path != "/w/f/repo/.npmrc" {
		t.Errorf(".npmrc: %+v", pr)
	}
	if pr := probe(t, p, "protect:entry:git:include"); pr.AuditOnly || pr.Plant[0].Path != "/w/f/repo/hp/.box-include" || pr.Host != HostGitStatus {
		t.Errorf("include: %+v", pr)
	}
}

// The host's git that settlePlant runs acts on the fixture's repository or on none: a
// fixture repository whose git directory is gone (moved aside by another run's audit,
// removed by the sandbox) made git find the operator's own repository around the
// fixture, and the drill committed their staged work there as "box drill", and could
// rebase --continue their rebase (field review, session 20).
func TestSettlePlantNotInOperatorsRepo(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", w, "-c", "user.name=op", "-c", "user.email=op@x"}, args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "mine")
	os.WriteFile(filepath.Join(w, "staged"), []byte("work\n"), 0o644)
	git("add", "staged")
	head := git("rev-parse", "HEAD")
	dir := filepath.Join(w, ".box-drill-fixture-0123", "repo") // its .git gone
	os.MkdirAll(dir, 0o755)
	target := filepath.Join(dir, "planted")
	os.WriteFile(target, []byte("plant"), 0o644)
	for _, host := range []string{HostGitCommit, HostGitRebase, HostGitStatus, HostGitConfigHook} {
		settlePlant(Probe{Plant: []PlantFile{{Path: target, Content: "plant"}}, Host: host, HostDir: dir, Marker: filepath.Join(w, "marker")})
	}
	if now := git("rev-parse", "HEAD"); now != head {
		t.Errorf("the drill's host git committed in the operator's repository: %s", git("log", "--format=%an: %s", "-3"))
	}
	if st := git("status", "--porcelain"); !strings.HasPrefix(st, "A  staged") {
		t.Errorf("the operator's staged work: %q", st)
	}
}
