package drill_test

// The drill's unreadable-repository row (issue 19, breach 1): through box drill the audit
// grants itself the modes to list the mode-111 directory and moves the repository aside
// (PASS); with that switched off in a test build, the host's git status runs the plant
// (BREACH).

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

const hiddenRepoRow = "host-exec:unreadable-repo"

func TestDrillHiddenRepo(t *testing.T) {
	testenv.RequireTool(t, "git")
	// The group of the rows judged; the whole drill's clean-up is TestDrillHostExec's.
	switchDrill(t, "audit-modes", "host-exec", hiddenRepoRow, nil, func(off bool, w *world, r drillRun) {
		r.want(t, hostExecRow, drill.Pass) // the audit itself is on
		leftNothing(t, filepath.Join(w.proj, ".box-drill-*"))
		if !off {
			quarantineEmpty(t, w)
		}
	})
}

const (
	worktreeGitdirRow = "host-exec:worktree-gitdir"
	mainRebaseRow     = "host-exec:main-rebase-todo"
)

// The drill run in a linked worktree (field test, session 10): the sandbox plants
// worktrees/NAME/gitdir in the common git directory, which lies outside the working
// directory; the audit moves the pointer aside and the operator's git lists no worktree
// outside (PASS). With the audit's listing of the common directory off in a test build,
// it lists the directory beside the working directory, where its git worktree repair
// would write a .git file (BREACH). The
// same for a stopped rebase planted in the common directory: the host's git status names
// its exec line as the next command of the git rebase --continue it tells you to run.
func TestDrillWorktreeGitdir(t *testing.T) {
	testenv.RequireTool(t, "git")
	var main string
	switchDrill(t, "audit-common", "host-exec", worktreeGitdirRow, func(w *world, l *lab.Lab) {
		main = filepath.Join(filepath.Dir(w.proj), "main")
		w.write(filepath.Join(main, "README"), "main\n")
		gitAs(t, w, main, []string{"init", "-q", "-b", "main"}, []string{"add", "README"}, []string{"commit", "-q", "-m", "one"},
			[]string{"worktree", "add", "-q", "-b", "wt", "../wt"})
		w.proj = filepath.Join(filepath.Dir(w.proj), "wt")
	}, func(off bool, w *world, r drillRun) {
		t.Logf("%s: %s %q", mainRebaseRow, r.rows[mainRebaseRow].Status, r.rows[mainRebaseRow].Observed)
		r.want(t, mainRebaseRow, map[bool]drill.Status{false: drill.Pass, true: drill.Breach}[off])
		r.want(t, hostExecRow, drill.Pass)
		if _, err := os.Lstat(filepath.Join(main, ".git", "rebase-merge")); err == nil {
			t.Error("the planted rebase-merge is left in the main repository")
		}
		leftNothing(t, filepath.Join(main, ".git", "worktrees", ".box-drill-*"), filepath.Join(filepath.Dir(w.proj), ".box-drill-*"))
		if !off {
			quarantineEmpty(t, w)
		}
	})
}

const worktreeLinkRow = "host-exec:worktree-link"

// The worktree-gitdir plant behind a link (hostile review, session 15): the sandbox makes
// worktrees/NAME a link to a directory of the working directory whose gitdir names a
// directory beside it. The audit moves the link aside and the operator's git lists no
// worktree outside (PASS); with the watch on such links off in a test build, it lists
// the directory, where its git worktree repair would write a .git file (BREACH).
func TestDrillWorktreeLink(t *testing.T) {
	testenv.RequireTool(t, "git")
	switchDrill(t, "audit-worktree-links", "host-exec", worktreeLinkRow, func(w *world, l *lab.Lab) {
		gitAs(t, w, w.proj, []string{"init", "-q", "-b", "main"}, []string{"commit", "-q", "--allow-empty", "-m", "one"})
	}, func(off bool, w *world, r drillRun) {
		r.want(t, worktreeGitdirRow, drill.Pass)
		r.want(t, hostExecRow, drill.Pass)
		leftNothing(t, filepath.Join(w.proj, ".git", "worktrees", ".box-drill-*"), filepath.Join(filepath.Dir(w.proj), ".box-drill-*"),
			filepath.Join(w.proj, ".box-drill-*"))
		if !off {
			quarantineEmpty(t, w)
		}
	})
}

// gitAs runs git with each of calls' arguments in dir as w's user, failing t on an error.
func gitAs(t *testing.T, w *world, dir string, calls ...[]string) {
	t.Helper()
	for _, args := range calls {
		c := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
		c.Dir, c.Env = dir, w.env
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatal(args, err, string(out))
		}
	}
}

const rwMountRow = "host-exec:rw-mount-repo"

// The drill run with a profile that mounts a directory read-write outside the working
// directory (hostile review, session 16): the sandbox plants a repository at the
// mount's top whose core.fsmonitor writes a marker. The audit walks the mount and moves
// the repository aside, and the host's git status there runs nothing (PASS); with that
// walk off in a test build, it runs the plant (BREACH). Without such a mount the row
// is SKIP.
func TestDrillReadWriteMount(t *testing.T) {
	testenv.RequireTool(t, "git")
	for _, off := range []bool{false, true} {
		w, l := labWorld(t)
		lib := filepath.Join(w.home, "lib")
		w.write(filepath.Join(lib, "README"), "lib\n")
		w.write(filepath.Join(w.home, ".config/box/profiles/libw.toml"), "[[mounts]]\npath = \"~/lib\"\nmode = \"rw\"\n")
		want := drill.Pass
		if off {
			w.withProtectionOff(t, "audit-mounts")
			want = drill.Breach
		}
		r := w.drill(l, "--profile", "libw", "--network", "none", "--group", "host-exec")
		t.Logf("box drill, mount walk off %v (exit %d): %s %q", off, r.code, r.rows[rwMountRow].Status, r.rows[rwMountRow].Observed)
		r.want(t, rwMountRow, want)
		r.want(t, hostExecRow, drill.Pass)
		if ents, _ := filepath.Glob(filepath.Join(lib, ".box-drill-*")); len(ents) != 0 {
			t.Errorf("left in the mount: %v", ents)
		}
		if !off {
			_, qdir := auditDirs(w)
			if q, _ := os.ReadDir(qdir); len(q) != 0 {
				t.Errorf("left in the quarantine: %v", q)
			}
		}
	}
	// Without a read-write mount the row says why it has nothing to probe.
	w, l := labWorld(t)
	r := w.drill(l, "--network", "none", "--group", "host-exec")
	r.want(t, rwMountRow, drill.Skip)
}
