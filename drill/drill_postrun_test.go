package drill_test

// The drill's host-exec row: inside, the probe plants a nested repository whose
// core.fsmonitor writes a marker; outside, after the run, Settle runs git status there as
// the operator's prompt would. Through box drill the post-run audit has moved it aside
// (PASS); with the audit off (a test build, or the runner alone), the BREACH.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/testenv"
)

const hostExecRow = "host-exec:nested-fsmonitor"

func TestDrillHostExec(t *testing.T) {
	testenv.RequireTool(t, "git")
	w, l := labWorld(t)
	r := w.drill(l, "--network", "none")
	t.Logf("box drill (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, hostExecRow, drill.Pass)
	r.want(t, "protect:rebase-exec", drill.Pass)
	if !strings.Contains(r.rows[hostExecRow].Observed, "the host's git status ran nothing") {
		t.Errorf("observed %q", r.rows[hostExecRow].Observed)
	}
	// The drill cleans up after itself: no planted repository, no quarantine of its own
	// plants, no audit report for them.
	if strings.Contains(r.stderr, "box: audit") {
		t.Errorf("the drill printed the audit of its own plants:\n%s", r.stderr)
	}
	ents, _ := filepath.Glob(filepath.Join(w.proj, ".box-drill-*"))
	if len(ents) != 0 {
		t.Errorf("left in the project: %v", ents)
	}
	_, qdir := auditDirs(w)
	if q, _ := os.ReadDir(qdir); len(q) != 0 {
		t.Errorf("left in the quarantine: %v", q)
	}
}

// The real box drill, with the audit switched off in a test build: the host's git runs
// the plant, and the drill says BREACH (exit 1). The two groups judged only
// (--group host-exec,protect).
func TestDrillHostExecBreachAuditOff(t *testing.T) {
	testenv.RequireTool(t, "git")
	w, l := labWorld(t)
	w.withProtectionOff(t, "audit")
	r := w.drill(l, "--network", "none", "--group", "host-exec,protect")
	t.Logf("box drill, audit off (exit %d): %s %q", r.code, r.rows[hostExecRow].Status, r.rows[hostExecRow].Observed)
	r.want(t, hostExecRow, drill.Breach)
	// The rebase left stopped with an exec line: only the audit takes it away.
	r.want(t, "protect:rebase-exec", drill.Breach)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
}

func auditDirs(w *world) (string, string) {
	return filepath.Join(w.home, ".local/share/box/audit"), filepath.Join(w.home, ".local/share/box/quarantine")
}

// The protection turned off: the probe runner as the user, with no post-run audit
// between it and the host's git: BREACH. The same, with the audit: PASS.
func TestDrillHostExecBreachWithoutAudit(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	for _, audit := range []bool{false, true} {
		plan, err := drill.BuildPlan(drill.Input{Home: w.home, Workdir: w.proj, UID: w.uid, Tier: "none",
			Facts: drill.Facts{Git: "/usr/bin/git"}, Nonce: "audit-off"})
		if err != nil {
			t.Fatal(err)
		}
		var probes []drill.Probe
		for _, p := range plan.Probes {
			if p.ID == hostExecRow {
				probes = append(probes, p)
			}
		}
		plan.Probes = probes
		in := postrun.Input{Workdir: w.proj, Home: w.home}
		before := postrun.Take(in)

		stdin, _ := json.Marshal(plan)
		c := w.cmd(drill.ProbeSubcommand)
		c.Stdin = bytes.NewReader(stdin)
		out, err := c.Output()
		var obs []drill.Observation
		if err != nil || json.Unmarshal(out, &obs) != nil {
			t.Fatalf("runner: %v %s", err, out)
		}
		if audit {
			rep := postrun.Audit(before, postrun.Take(in), t.TempDir(), time.Now())
			if err := rep.Err(); err != nil || len(rep.Findings) != 1 || rep.Findings[0].Kind != postrun.FindRepo {
				t.Fatalf("audit: %v %+v", err, rep.Findings)
			}
		}
		res := drill.Judge(plan, drill.Settle(plan, obs))
		want := map[bool]drill.Status{false: drill.Breach, true: drill.Pass}[audit]
		if len(res) != 1 || res[0].Status != want {
			t.Errorf("audit %v: %+v, want %s", audit, res, want)
		}
		t.Logf("audit %v: %s %q", audit, res[0].Status, res[0].Observed)
		if ents, _ := filepath.Glob(filepath.Join(w.proj, ".box-drill-*")); len(ents) != 0 {
			t.Errorf("Settle left %v", ents)
		}
	}
}

// A planted .lfsconfig (git-lfs's server URLs, hostile review session 12): absent at
// launch, the plant lands and the post-run audit must move it aside; with the audit off
// (a test build, BOX_UNSAFE_OFF=audit) the host finds it: BREACH.
func TestDrillLFSConfig(t *testing.T) {
	switchDrill(t, "audit", "protect", "protect:entry:.lfsconfig", nil, nil)
}

// What an allowed .envrc loads (hostile review, session 19): the fixture's .envrc says
// source_env_if_exists .envrc.local; the sandbox's .envrc.local, absent at launch, is
// the audit's to move aside before the host's direnv runs it on cd.
func TestDrillEnvrcSource(t *testing.T) {
	switchDrill(t, "audit", "protect", "protect:entry:direnv:source", nil, nil)
}
