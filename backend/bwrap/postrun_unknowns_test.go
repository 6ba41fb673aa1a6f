package bwrap_test

// The post-run audit's unknowns, for real (issue 19): what the host-side walk cannot
// open, stat, read or move never hides anything. A hostile `box run -y` as the
// unprivileged test user plants a repository and chmods it out of box's sight (111,
// 000), or chmods what a move needs (555, 000), or writes a worktree pointer that makes
// the host's git write elsewhere, or a sparse file meant to fill the disk through the
// quarantine; afterwards the user's own git, on the host, runs and writes nothing.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/internal/testenv"
)

// hiddenRepo is the breach 1, with a mode of choice on the repository's top.
func hiddenRepo(mode string) string {
	return `git init -q evil && git -C evil config core.fsmonitor "echo RAN >> $PWD/pwn; false" && chmod ` + mode + ` evil`
}

// hostStatus runs the host's git status in dir as the user (cd works in a 111
// directory; git finds .git by name) and reports whether the planted command ran.
func (w *world) hostRan(dir string) bool {
	w.t.Helper()
	w.hostGit(dir, "status")
	_, err := os.Lstat(filepath.Join(w.proj, "pwn"))
	return err == nil
}

func TestSandboxPostRunAuditUnreadableRepo(t *testing.T) {
	testenv.RequireTool(t, "git")
	for _, mode := range []string{"111", "000", "311"} {
		t.Run(mode, func(t *testing.T) {
			w := newWorld(t)
			r := w.sh(hiddenRepo(mode))
			t.Logf("exit %d\n%s", r.code, r.stderr)
			if r.code != 0 || !strings.Contains(r.stderr, "evil/.git: new git repository") {
				t.Errorf("exit %d, want 0 and the hidden repository found:\n%s", r.code, r.stderr)
			}
			// The user's mode is back on what stays in place.
			if fi, err := os.Lstat(filepath.Join(w.proj, "evil")); err != nil || fi.Mode().Perm().String() != os.FileMode(octal(mode)).String() {
				t.Errorf("evil's mode after the audit: %v %v, want %s", fi.Mode(), err, mode)
			}
			if octal(mode)&0o100 == 0 {
				os.Chmod(filepath.Join(w.proj, "evil"), 0o755) // the user lets themself in
			}
			if w.hostRan(filepath.Join(w.proj, "evil")) {
				t.Errorf("the host's git status ran the planted core.fsmonitor")
			}
			// Nothing left for the next run.
			if r := w.run("run", "-y", "--", "true"); r.code != 0 || strings.Contains(r.stderr, "box: audit") {
				t.Errorf("the next run: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}

func octal(s string) uint32 {
	var m uint32
	for _, c := range s {
		m = m*8 + uint32(c-'0')
	}
	return m
}

// Breach 4: the modes a move needs, taken away; box restores them and finishes, and no
// later run refuses.
func TestSandboxPostRunAuditChmodDefeatsNoMove(t *testing.T) {
	testenv.RequireTool(t, "git")
	for name, plant := range map[string]string{
		"parent-555":  `git init -q evil && git -C evil config core.fsmonitor "echo RAN >> $PWD/pwn; false" && chmod 555 evil`,
		"gitdir-555":  `git init -q evil && git -C evil config core.fsmonitor "echo RAN >> $PWD/pwn; false" && chmod 000 evil/.git/description && chmod 555 evil/.git evil/.git/hooks evil`,
		"file-000":    `git init -q evil && git -C evil config core.fsmonitor "echo RAN >> $PWD/pwn; false" && chmod 000 evil/.git/HEAD evil/.git/description`,
		"nested-0":    `mkdir -p a/b && git init -q a/b/evil && git -C a/b/evil config core.fsmonitor "echo RAN >> $PWD/pwn; false" && chmod 0 a/b/evil/.git/objects && chmod 555 a/b/evil a/b && chmod 100 a`,
		"config-000":  `git init -q evil && git -C evil config core.fsmonitor "echo RAN >> $PWD/pwn; false"; chmod 000 evil/.git/config; chmod 555 evil/.git`,
		"protected-0": `git init -q evil && git -C evil config core.fsmonitor "echo RAN >> $PWD/pwn; false" && chmod 0 evil/.git/hooks && chmod 500 evil/.git`,
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			r := w.sh(plant)
			t.Logf("exit %d\n%s", r.code, r.stderr)
			if r.code != 0 || !strings.Contains(r.stderr, "new git repository") {
				t.Errorf("exit %d, want 0 and the repository neutralised:\n%s", r.code, r.stderr)
			}
			// The user restores the modes as they please, then the host's git.
			exec.Command("chmod", "-R", "u+rwX", w.proj).Run()
			for _, d := range []string{"evil", "a/b/evil"} {
				if w.hostRan(filepath.Join(w.proj, d)) {
					t.Errorf("the host's git status in %s ran the planted core.fsmonitor", d)
				}
			}
			if r := w.run("run", "-y", "--", "true"); r.code != 0 || strings.Contains(r.stderr, "box: audit") {
				t.Errorf("the next run: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}

// Breach 6: a linked worktree's gitdir file naming a directory outside the sandbox's
// reach: the host's git worktree repair would write a .git file there.
func TestSandboxPostRunAuditWorktreeGitdir(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := w.hostGit(w.proj, "commit", "-q", "--allow-empty", "-m", "one"); err != nil {
		t.Fatal(err, out)
	}
	victim := filepath.Join(w.home, "victim")
	w.write(filepath.Join(victim, "keep"), "the user's\n")
	r := w.sh(`set -e; d=.git/worktrees/evil; mkdir -p $d; echo ref: refs/heads/main > $d/HEAD; echo ../.. > $d/commondir
echo ` + victim + `/.git > $d/gitdir`)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, ".git/worktrees/evil/gitdir") {
		t.Errorf("exit %d, want 0 and the gitdir pointer found:\n%s", r.code, r.stderr)
	}
	out, _ := w.hostGit(w.proj, "worktree", "repair")
	t.Logf("host git worktree repair: %s", out)
	if _, err := os.Lstat(filepath.Join(victim, ".git")); err == nil {
		t.Errorf("the host's git worktree repair wrote %s/.git", victim)
	}
	// A worktree made inside, the ordinary way, is no finding.
	w2 := newWorld(t)
	w2.hostGit(w2.proj, "init", "-q")
	w2.hostGit(w2.proj, "commit", "-q", "--allow-empty", "-m", "one")
	r = w2.sh(`git -c user.name=a -c user.email=a@x worktree add -q wt`)
	if r.code != 0 || strings.Contains(r.stderr, "gitdir") {
		t.Errorf("git worktree add inside: exit %d\n%s", r.code, r.stderr)
	}
}

// The same pointer behind a link (hostile review, session 15): worktrees/evil is a link
// to a directory of the work tree holding the gitdir file. The audit listed only the
// directories in worktrees/, said nothing, and the host's git worktree repair, which
// follows the link, wrote victim/.git. The link is a finding now, moved aside; with its
// watch off (a test build) repair writes the .git again, so the test can fail.
func TestSandboxPostRunAuditWorktreeLink(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := w.hostGit(w.proj, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	victim := filepath.Join(w.home, "victim")
	w.write(filepath.Join(victim, "keep"), "the user's\n")
	plant := `set -e; mkdir -p stash .git/worktrees; echo ` + victim + `/.git > stash/gitdir; ln -s ../../stash .git/worktrees/evil`
	r := w.sh(plant)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, "box: audit: .git/worktrees/evil: protected file added") {
		t.Errorf("exit %d, want 0 and the link found:\n%s", r.code, r.stderr)
	}
	out, _ := w.hostGit(w.proj, "worktree", "repair")
	t.Logf("host git worktree repair: %s", out)
	if _, err := os.Lstat(filepath.Join(victim, ".git")); err == nil {
		t.Errorf("the host's git worktree repair wrote %s/.git", victim)
	}
	w.withProtectionOff(t, "audit-worktree-links")
	os.RemoveAll(filepath.Join(w.proj, "stash"))
	if r := w.sh(plant); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	w.hostGit(w.proj, "worktree", "repair")
	if _, err := os.Lstat(filepath.Join(victim, ".git")); err != nil {
		t.Errorf("with the watch off the host's git worktree repair wrote no %s/.git (the test proves nothing): %v", victim, err)
	}
}

// The same pointer planted from a linked worktree (field test, session 10): box runs in
// the worktree, its main repository lies outside the working directory, and the common
// git directory the sandbox writes holds worktrees/. Before, the audit listed worktrees/
// only in a git directory its walk found, so a worktrees/NAME made in the common
// directory was never seen, and the host's git worktree repair wrote victim/.git: the
// victim (here a directory in the home) became a work tree of the sandbox's repository.
func TestSandboxPostRunAuditWorktreeGitdirFromLinkedWorktree(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	main := filepath.Join(filepath.Dir(w.proj), "main")
	w.write(filepath.Join(main, "README"), "main\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "README"}, {"commit", "-q", "-m", "one"},
		{"worktree", "add", "-q", "-b", "wt", "../wt"}} {
		if out, err := w.hostGit(main, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	w.proj = filepath.Join(filepath.Dir(w.proj), "wt")
	victim := filepath.Join(w.home, "victim")
	w.write(filepath.Join(victim, "keep"), "the user's\n")
	r := w.sh(`set -e; c=$(git rev-parse --git-common-dir); d=$c/worktrees/evil; mkdir -p $d
echo ref: refs/heads/main > $d/HEAD; echo ../.. > $d/commondir; echo ` + victim + `/.git > $d/gitdir`)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, ".git/worktrees/evil/gitdir") {
		t.Errorf("exit %d, want 0 and the gitdir pointer found:\n%s", r.code, r.stderr)
	}
	out, _ := w.hostGit(main, "worktree", "repair")
	t.Logf("host git worktree repair: %s", out)
	if _, err := os.Lstat(filepath.Join(victim, ".git")); err == nil {
		t.Errorf("the host's git worktree repair wrote %s/.git", victim)
	}
	// The worktree's own work is no finding: a commit and a branch inside.
	r = w.sh(`git -c user.name=a -c user.email=a@x commit -q --allow-empty -m two && git branch -q side`)
	if r.code != 0 || strings.Contains(r.stderr, "box: audit") {
		t.Errorf("a commit in the linked worktree: exit %d\n%s", r.code, r.stderr)
	}
}

// Breach 5: a sparse file in a new .git on a tmpfs project: the quarantine (on the home's
// disk) keeps its holes; past the copy bound, it is renamed aside where it is.
func TestSandboxPostRunAuditQuarantineSparse(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if err := syscall.Mount("tmpfs", w.proj, "tmpfs", 0, "size=3g,mode=0755"); err != nil {
		t.Fatalf("tmpfs on the project: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(w.proj, syscall.MNT_DETACH) })
	os.Chown(w.proj, w.uid, w.gid)
	r := w.sh(`git init -q big && truncate -s 2G big/.git/sparse && git -C big config core.fsmonitor "echo RAN >> $PWD/pwn; false"`)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, "big/.git: new git repository") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	rep := lastManifest(t, w)
	if len(rep.Findings) != 1 || len(rep.Findings[0].Kept) != 1 {
		t.Fatalf("manifest: %+v", rep.Findings)
	}
	var st syscall.Stat_t
	kept := filepath.Join(rep.Findings[0].Kept[0], "sparse")
	if err := syscall.Stat(kept, &st); err != nil || st.Size != 2<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("the quarantined sparse file: size %d, %d bytes on disk (%v): want 2 GiB, its holes kept", st.Size, st.Blocks*512, err)
	}
	// Past the bound (256 MiB of real data): renamed aside in the project, not copied.
	r = w.sh(`git init -q fat && head -c 300000000 /dev/zero > fat/.git/blob`)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, "renamed aside where it was, not copied") {
		t.Errorf("past the bound: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "fat", ".git")); err == nil {
		t.Errorf("fat/.git is still there")
	}
	if m, _ := filepath.Glob(filepath.Join(w.proj, "fat", ".box-quarantined-*-.git")); len(m) != 1 {
		t.Errorf("renamed aside: %v", m)
	}
	if w.hostRan(filepath.Join(w.proj, "big")) {
		t.Errorf("the host's git ran the plant")
	}
}

func lastManifest(t *testing.T, w *world) postrun.Report {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(w.home, ".local/share/box/quarantine/*/manifest.json"))
	if len(ms) == 0 {
		t.Fatal("no manifest")
	}
	b, err := os.ReadFile(ms[len(ms)-1])
	var r postrun.Report
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// What box truly cannot read (a directory not the user's, which the user can enter but
// not list) fails closed: exit 125, the path named with the one command that lets the
// next run finish; after it, the next run finishes the audit and the host's git runs
// nothing.
func TestSandboxPostRunAuditCannotFinish(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	x := filepath.Join(w.proj, "x")
	w.write(filepath.Join(x, "sub", "keep"), "the user's\n")
	os.Chown(x, 0, 0)
	os.Chmod(x, 0o711)
	r := w.sh(`git init -q x/sub/evil && git -C x/sub/evil config core.fsmonitor "echo RAN >> $PWD/pwn; false"`)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	fix := "sudo chown -R " + strconv.Itoa(w.uid) + ":" + strconv.Itoa(w.gid) + " " + x
	if r.code != 125 || !strings.Contains(r.stderr, "x: box could not read it") || !strings.Contains(r.stderr, "to let box finish: "+fix) {
		t.Fatalf("exit %d, want 125 naming x and %q", r.code, fix)
	}
	// Until then every run says the same, with the same way forward.
	if r := w.run("run", "-y", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, fix) {
		t.Errorf("the next run: exit %d\n%s", r.code, r.stderr)
	}
	if out, err := exec.Command("sh", "-c", strings.TrimPrefix(fix, "sudo ")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	r = w.run("run", "-y", "--", "true")
	t.Logf("after the fix: exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, "x/sub/evil/.git: new git repository") {
		t.Errorf("after the fix: exit %d", r.code)
	}
	if w.hostRan(filepath.Join(x, "sub", "evil")) {
		t.Errorf("the host's git status ran the planted core.fsmonitor")
	}
}

// linkedWorktree makes a repository at home/src/main with three commits and
// extensions.worktreeConfig, adds the linked worktree home/src/wt, and points w at it:
// the main worktree's git directory (the common one) lies outside the working directory.
func linkedWorktree(t *testing.T, w *world) (main string) {
	t.Helper()
	main = filepath.Join(filepath.Dir(w.proj), "main")
	w.write(filepath.Join(main, "README"), "main\n")
	steps := [][]string{{"init", "-q", "-b", "main"}}
	for _, n := range []string{"1", "2", "3"} {
		steps = append(steps, []string{"commit", "-q", "--allow-empty", "-m", n})
	}
	steps = append(steps, []string{"config", "extensions.worktreeConfig", "true"}, []string{"worktree", "add", "-q", "-b", "wt", "../wt"})
	for _, args := range steps {
		if out, err := w.hostGit(main, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	w.proj = filepath.Join(filepath.Dir(w.proj), "wt")
	return main
}

// From a linked worktree the sandbox writes the main worktree's own state in the common
// git directory (field test, session 10): a stopped rebase whose todo holds an exec line
// (the host's git status in the main worktree says to run git rebase --continue, which
// runs it), and, where the common directory's config.worktree is not bound read-only
// (the Landlock mode), a core.fsmonitor in it (the host's git status runs it). Before,
// the audit guarded these only in the worktree's own git directory.
func TestSandboxPostRunAuditMainWorktreeStateFromLinkedWorktree(t *testing.T) {
	testenv.RequireTool(t, "git")
	t.Run("rebase-todo", func(t *testing.T) {
		w := newWorld(t)
		main := linkedWorktree(t, w)
		mark := filepath.Join(w.markerDir(), "rebase")
		r := w.sh(`set -e; c=$(git rev-parse --git-common-dir); g=$(git rev-parse --git-dir)
GIT_SEQUENCE_EDITOR="sed -i 1ibreak" git -c user.name=a -c user.email=a@x rebase -q -i HEAD~2
cp -r $g/rebase-merge $c/rebase-merge; git rebase --abort
echo refs/heads/main > $c/rebase-merge/head-name
echo "exec echo RAN > ` + mark + `" > $c/rebase-merge/git-rebase-todo`)
		t.Logf("exit %d\n%s", r.code, r.stderr)
		if r.code != 0 || !strings.Contains(r.stderr, "main/.git/rebase-merge/git-rebase-todo") {
			t.Errorf("exit %d, want 0 and the main worktree's todo list found:\n%s", r.code, r.stderr)
		}
		out, _ := w.hostGit(main, "rebase", "--continue")
		t.Logf("host git rebase --continue: %s", out)
		if _, err := os.Lstat(mark); err == nil {
			t.Errorf("the host's git rebase --continue in the main worktree ran the planted exec line")
		}
	})
	t.Run("config.worktree", func(t *testing.T) {
		p := landlockWorld(t)
		w := &world{t: p.T, box: p.Box, uid: p.UID, gid: p.GID, home: p.Home, proj: p.Proj, env: p.Env}
		main := linkedWorktree(t, w)
		mark := filepath.Join(w.markerDir(), "fsmonitor")
		r := w.sh(`set -e; c=$(git rev-parse --git-common-dir)
printf '[core]\n\tfsmonitor = "echo RAN > `+mark+`; false"\n' >> $c/config.worktree`, "-p", "ll", "--isolation", "landlock")
		t.Logf("exit %d\n%s", r.code, r.stderr)
		if r.code != 0 || !strings.Contains(r.stderr, "main/.git/config.worktree: added core.fsmonitor") {
			t.Errorf("exit %d, want 0 and the main worktree's config.worktree found:\n%s", r.code, r.stderr)
		}
		w.hostGit(main, "status")
		if _, err := os.Lstat(mark); err == nil {
			t.Errorf("the host's git status in the main worktree ran the planted core.fsmonitor")
		}
	})
}

// core.worktree moves a relative core.hooksPath (hostile review, session 15): in the
// Landlock mode the repository's config is writable during the run; the sandbox added
// core.worktree = ../sub to a repository whose hooks are in .husky (husky's layout) and
// planted sub/.husky/pre-commit. core.worktree runs nothing itself, the audit watched
// only .husky, and the host's git commit ran the plant. The hooks directory in the work
// tree core.worktree names is watched now; with that off (a test build) the host's
// commit runs the plant again, so the test can fail.
func TestSandboxPostRunAuditCoreWorktreeHooks(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	marks := w.markerDir()
	w.write(filepath.Join(w.proj, ".husky", "pre-commit"), "#!/bin/sh\nexit 0\n")
	os.Chmod(filepath.Join(w.proj, ".husky", "pre-commit"), 0o755)
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", ".husky"}, {"commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := w.hostGit(w.proj, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	plant := `set -e; mkdir -p sub/.husky; printf '#!/bin/sh\ntouch ` + marks + `/ran\n' > sub/.husky/pre-commit
chmod +x sub/.husky/pre-commit; printf '\tworktree = ../sub\n' >> .git/config`
	ran := func() bool {
		w.hostGit(w.proj, "commit", "-q", "--allow-empty", "-m", "two")
		_, err := os.Lstat(filepath.Join(marks, "ran"))
		return err == nil
	}
	r := w.sh(plant, "--isolation", "landlock")
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, "box: audit: sub/.husky/pre-commit: protected file added") {
		t.Errorf("exit %d, want 0 and the planted hook found:\n%s", r.code, r.stderr)
	}
	if ran() {
		t.Errorf("the host's git commit ran the hook planted in core.worktree's .husky")
	}
	w.withProtectionOff(t, "audit-worktree-hooks")
	os.RemoveAll(filepath.Join(w.proj, "sub"))
	if r := w.sh(plant, "--isolation", "landlock"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !ran() {
		t.Errorf("with the watch off the host's git commit did not run the plant (the test proves nothing)")
	}
}
