package drill_test

// The drill's link-out row (a hostile review): the sandbox makes a protected path's
// directory a link to its own ~/.claude holding hooks. Through box drill the audit moves
// the link aside (PASS); with the link guard switched off in a test build, the host's
// Claude Code session start runs the plant (BREACH).

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/drill"
)

const linkOutRow = "protect:link-out"

func TestDrillLinkOut(t *testing.T) {
	switchDrill(t, "audit-links", "protect", linkOutRow, nil, nil)
}

const unscannedRow = "protect:unscanned-envrc"

// The drill's unscanned-envrc row (hostile review, session 15): the fixture's repository
// in node_modules, which the protected set's scan does not enter, gets an .envrc from the
// sandbox. The audit watches the project files at the top of every work tree it finds
// and moves it aside (PASS); with that off in a test build, the host's direnv runs it
// (BREACH).
func TestDrillUnscannedRepo(t *testing.T) {
	switchDrill(t, "audit-tops", "protect", unscannedRow, nil, func(off bool, w *world, r drillRun) {
		if !off {
			r.want(t, linkOutRow, drill.Pass)
		}
	})
}

const worktreeHooksRow = "protect:worktree-hooks"

// The drill's worktree-hooks row (hostile review, session 15): the sandbox adds
// core.worktree = ../sub to the config of the fixture's repository in node_modules
// (writable: the scan does not reach it), whose core.hooksPath is the relative .githooks,
// and puts a pre-commit in sub/.githooks. The audit watches the hooks directory in the
// work tree core.worktree names and moves the hook aside (PASS); with that off in a test
// build, the host's git commit runs it (BREACH).
func TestDrillWorktreeHooks(t *testing.T) {
	switchDrill(t, "audit-worktree-hooks", "protect", worktreeHooksRow, nil, func(off bool, w *world, r drillRun) {
		if !off {
			r.want(t, unscannedRow, drill.Pass)
		}
	})
}

const degitRow = "protect:degit-envrc"

// The drill's degit-envrc row (session 16; the variant the session-15 review found after
// the top guards): the sandbox removes the .git of the fixture's second repository in
// node_modules, so the snapshot after the run no longer finds a work tree there, and
// writes its .envrc. The audit carries the tops the snapshot before watched into the one
// after and moves it aside (PASS); with that off in a test build (the top guards still
// on), the host's direnv runs it (BREACH).
func TestDrillDegitRepo(t *testing.T) {
	switchDrill(t, "audit-watched", "protect", degitRow, nil, func(off bool, w *world, r drillRun) {
		r.want(t, unscannedRow, drill.Pass) // the top guards themselves stay on
	})
}

const configHookRow = "protect:config-hook"

// The drill's config-hook row (hostile review, session 16): the sandbox adds a configured
// hook of git 2.54 ([hook "box-drill"] event = pre-commit, command = ...) to the config of
// the fixture's repository in node_modules (writable: the scan does not reach it). The
// audit cuts it (PASS); with git 2.54's keys left out of the audit in a test build, the
// host's git commit, as git 2.54 runs it, runs the command (BREACH).
func TestDrillConfigHook(t *testing.T) {
	for _, off := range []bool{false, true} {
		w, l := labWorld(t)
		want := drill.Pass
		if off {
			w.withProtectionOff(t, "audit-config-hooks")
			want = drill.Breach
		}
		r := w.drill(l, "--network", "none", "--group", "protect")
		t.Logf("box drill, config hooks off %v (exit %d): %s %q", off, r.code, r.rows[configHookRow].Status, r.rows[configHookRow].Observed)
		r.want(t, configHookRow, want)
		r.want(t, worktreeHooksRow, drill.Pass)
		r.want(t, unscannedRow, drill.Pass)
	}
}

// The drill's kept-repo row (hostile review, session 16): a run makes a repository whose
// config has an alias; the audit moves its .git into the quarantine, where the host's
// git, run in the kept copy as the operator reads it, runs nothing (PASS: its HEAD is
// renamed). With that renaming off in a test build, the kept copy is a live git
// directory and the alias runs (BREACH). Nothing is left in the project either way.
func TestDrillKeptRepo(t *testing.T) {
	switchDrill(t, "audit-kept", "protect", drill.KeptRepoID, nil, func(off bool, w *world, r drillRun) {
		leftNothing(t, filepath.Join(w.proj, ".box-drill-*"), filepath.Join(os.TempDir(), "box-drill-kept-*"))
	})
}

// The drill's stale-listing row: a repository cloned between two runs into a directory
// whose listing the first run kept (its times set back) is seen by the second, whose
// planted hook the host's git commit then never runs (PASS). With the stamp check off in
// a test build, the second run takes the old listing and never looks at the clone
// (BREACH). Nothing is left in the project either way.
func TestDrillStaleListing(t *testing.T) {
	switchDrill(t, "listing-stamps", "protect", drill.StaleListingID, nil, func(off bool, w *world, r drillRun) {
		leftNothing(t, filepath.Join(w.proj, ".box-drill-*"), filepath.Join(os.TempDir(), "box-drill-listing-*"))
	})
}

// The drill's home-dotdir-link and home-missing-link rows (hostile review, session 18): a
// link a level down in a dot-directory of the home into the tree (stow's ~/.ssh/config),
// and a dangling one naming a file in a directory of the tree not made yet; the host's
// shell sources each after the run and runs nothing (PASS). With the protected set's
// look into the home's dot-directories, or its watch of a missing directory, off in a
// test build, the plant lands and runs (BREACH). Nothing is left in the home either way.
func TestDrillHomeDotdirAndMissingLinks(t *testing.T) {
	for _, c := range []struct{ sw, row string }{{"home-dotdirs", "protect:home-dotdir-link"}, {"home-missing", "protect:home-missing-link"}} {
		t.Run(c.sw, func(t *testing.T) {
			switchDrill(t, c.sw, "protect", c.row, nil, func(off bool, w *world, r drillRun) {
				leftNothing(t, filepath.Join(w.proj, ".box-drill-*"), filepath.Join(w.home, ".box-drill-*"))
			})
		})
	}
}

// The drill's subdir-agent-settings row (hostile review, session 18): agent settings with
// a SessionStart hook planted in a plain directory of the fixture's repository (no
// top); after the audit the drill starts the agent's hooks there and nothing runs
// (PASS). With the audit's watch of such files in every directory off in a test build,
// the plant stays and runs (BREACH).
func TestDrillSubdirAgentSettings(t *testing.T) {
	switchDrill(t, "audit-anywhere", "protect", "protect:subdir-agent-settings", nil, nil)
}
