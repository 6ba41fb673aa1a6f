package bwrap_test

// The protected set, for real: box run as the unprivileged user in real git trees. A
// hostile run plants every class of thing the host would execute later (hooks,
// core.fsmonitor, core.hooksPath, a nested repository's config, a rewritten worktree
// pointer, .envrc, a VS Code task, agent settings) and tries the tricks around the
// read-only binds (rename .git away, plant commondir); then the host user's own git
// commands run and must execute nothing. Commits made inside land in the history, in a
// plain repository, a linked worktree whose git directory lies outside, and a submodule.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/internal/testenv"
)

// host runs a shell snippet on the host as the world's user, in dir.
func (w *world) host(dir, script string) (string, error) {
	w.t.Helper()
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	c.Env = append(append([]string{}, w.env...), "GIT_CONFIG_NOSYSTEM=1")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	var o bytes.Buffer
	c.Stdout, c.Stderr = &o, &o
	err := c.Run()
	return o.String(), err
}

func (w *world) mustHost(dir, script string) string {
	w.t.Helper()
	out, err := w.host(dir, script)
	if err != nil {
		w.t.Fatalf("host %q in %s: %v\n%s", script, dir, err, out)
	}
	return out
}

// markers is a host directory the sandbox cannot see: only the host running a planted
// command can create a file there.
func (w *world) markers() string {
	m := filepath.Join(filepath.Dir(w.home), "markers")
	os.MkdirAll(m, 0o777)
	os.Chmod(m, 0o777)
	return m
}

func (w *world) noMarkers(m, when string) {
	w.t.Helper()
	ents, _ := os.ReadDir(m)
	for _, e := range ents {
		w.t.Errorf("%s: marker %s exists: the host ran what the sandbox planted", when, e.Name())
	}
}

// sibling makes a directory of the user's beside the project.
func (w *world) sibling(name string) string {
	d := filepath.Join(filepath.Dir(w.proj), name)
	os.MkdirAll(d, 0o755)
	os.Chown(d, w.uid, w.gid)
	return d
}

const gitInit = `git init -q -b main && git config user.name op && git config user.email op@example.com && `

func TestProtectHostileRun(t *testing.T) {
	testenv.RequireTool(t, "git")
	hostileRun(t, nil)
}

// With every entry dropped (a user profile's protect_drop), the same hostile run does
// reach the host: the host's own git runs the planted hooks and fsmonitor commands. This
// is what proves the test above can fail.
func TestProtectHostileRunUnprotected(t *testing.T) {
	testenv.RequireTool(t, "git")
	var names []string
	for _, e := range protect.Entries() {
		names = append(names, `"`+e.Name+`"`)
	}
	hostileRun(t, names)
}

func hostileRun(t *testing.T, drop []string) {
	w := newWorld(t)
	m := w.markers()
	var extra []string
	if drop != nil {
		w.write(filepath.Join(w.home, ".config/box/profiles/open.toml"), "protect_drop = ["+strings.Join(drop, ", ")+"]\n")
		extra = []string{"--profile", "open"}
	}
	p := w.proj
	w.write(filepath.Join(p, ".envrc"), "export X=1\n")
	w.write(filepath.Join(p, ".vscode", "tasks.json"), `{"version":"2.0.0","tasks":[]}`+"\n")
	w.write(filepath.Join(p, ".claude", "settings.json"), `{"permissions":{}}`+"\n")
	w.mustHost(p, gitInit+`git add -A && git commit -qm one && git worktree add -q wt && `+
		`mkdir -p vendor/lib && cd vendor/lib && `+gitInit+`git commit -q --allow-empty -m lib`)
	orig := map[string]string{}
	for _, f := range []string{".envrc", ".vscode/tasks.json", ".claude/settings.json", ".git/config", "vendor/lib/.git/config", "wt/.git"} {
		b, _ := os.ReadFile(filepath.Join(p, f))
		orig[f] = string(b)
	}

	// The tricks around the binds: rename a protected path's directory away and put one
	// of its own in its place, plant what is absent, replace by a link.
	tricks := `# the tricks
mv .git .git.old; mv .vscode .vscode.old; mv .claude .claude.old; mv .git/modules .git/m2 2>/dev/null
printf '../.evil/w/.git\n' > .git/commondir; rm -f .git/commondir
printf '[core]\n\tfsmonitor = "touch %s/worktree-config; false"\n' "$M" > .git/config.worktree
ln -sf ../.evil/w/.git/config .git/config 2>/dev/null
rm -rf .git/hooks; mkdir .git/hooks2
git init -q vendor/new && git -C vendor/new config core.fsmonitor "touch $M/new-nested; false"`
	hostile := `M=` + m + `
hook='#!/bin/sh
touch ` + m + `/hook-$(basename $0) 2>/dev/null; exit 0'
for h in pre-commit post-checkout post-commit reference-transaction; do printf '%s\n' "$hook" > .git/hooks/$h; chmod +x .git/hooks/$h; done
git config core.fsmonitor "touch $M/fsmonitor; false"
mkdir -p evilhooks && printf '%s\n' "$hook" > evilhooks/pre-commit && chmod +x evilhooks/pre-commit && git config core.hooksPath evilhooks
printf '[core]\n\tfsmonitor = "touch %s/fsmonitor-append; false"\n' "$M" >> .git/config
git -C vendor/lib config core.fsmonitor "touch $M/nested; false"
printf '[core]\n\tfsmonitor = "touch %s/nested-append; false"\n' "$M" >> vendor/lib/.git/config
mkdir -p .evil && git init -q .evil/w && git -C .evil/w config core.fsmonitor "touch $M/pointer; false"
printf 'gitdir: %s/.evil/w/.git\n' "$PWD" > wt/.git
printf 'touch %s/envrc\n' "$M" > .envrc
printf '{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"touch %s/vscode","runOptions":{"runOn":"folderOpen"}}]}\n' "$M" > .vscode/tasks.json
printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch %s/claude"}]}]}}\n' "$M" > .claude/settings.json
` + tricks + `
# and a commit, which must work
echo inside > inside.txt && git add inside.txt && git commit -qm inside-commit && echo COMMITTED
exit 0`
	if drop != nil {
		// Unprotected, the tricks would only break the repository the plants are in.
		hostile = strings.Replace(hostile, tricks, "", 1)
	}
	r := w.sh(hostile, extra...)
	if r.code != 0 || !strings.Contains(r.stdout, "COMMITTED") {
		t.Fatalf("hostile run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("hostile run:\n%s%s", r.stdout, r.stderr)
	w.noMarkers(m, "after the hostile run")

	// What the operator does next, on the host.
	w.host(p, `git status >/dev/null; git checkout -q -b x; git commit -q --allow-empty -m host; git checkout -q main`)
	w.host(filepath.Join(p, "vendor", "lib"), `git status >/dev/null`)
	w.host(filepath.Join(p, "wt"), `git status >/dev/null; git commit -q --allow-empty -m wt`)
	if drop != nil {
		// Dropped entries are the profile's to give away, and the post-run audit honours
		// that: the plants in them run on the host. Only the repository the rewritten
		// pointer names is the audit's regardless (a new repository), so that one is moved.
		for _, want := range []string{"hook-pre-commit", "fsmonitor-append", "nested-append"} {
			if _, err := os.Stat(filepath.Join(m, want)); err != nil {
				t.Errorf("unprotected: marker %s absent: the host did not run the plant (the test could not fail)", want)
			}
		}
		if !strings.Contains(r.stderr, ".evil/w/.git: new git repository") {
			t.Errorf("unprotected: the audit does not move the new repository the pointer names")
		}
		for _, f := range []string{".envrc", ".vscode/tasks.json", ".claude/settings.json"} {
			if b, _ := os.ReadFile(filepath.Join(p, f)); string(b) == orig[f] {
				t.Errorf("unprotected: %s unchanged", f)
			}
		}
		return
	}
	w.noMarkers(m, "after the host's git status, checkout and commit")
	for f, want := range orig {
		if b, _ := os.ReadFile(filepath.Join(p, f)); string(b) != want {
			t.Errorf("%s changed by the sandbox:\n%s", f, b)
		}
	}
	// The temporary placeholder is gone; the permanent ones are as box made them.
	if _, err := os.Lstat(filepath.Join(p, ".git/commondir")); err == nil {
		t.Error(".git/commondir is on the host after the run")
	}
	// config.worktree was creatable (git reads it only with extensions.worktreeConfig,
	// which the protected config does not set): it stays inert, as the markers show.
	if out, err := w.host(p, `git config extensions.worktreeConfig`); err == nil {
		t.Errorf("extensions.worktreeConfig is set on the host: %q", out)
	}
	if log := w.mustHost(p, `git log --format=%s main`); !strings.Contains(log, "inside-commit") {
		t.Errorf("the commit made inside is not in the history:\n%s", log)
	}
	// A repository created during the run cannot be protected beforehand, nor can a
	// nested clone's work tree renamed away and replaced by a new one (which is the
	// same thing): the post-run audit is what catches them (package postrun).
	if b, _ := os.ReadFile(filepath.Join(p, "vendor/new/.git/config")); !strings.Contains(string(b), "new-nested") {
		t.Logf("vendor/new was not created (%q)", b)
	}
}

// Branch, rebase, fetch and commit inside a plain repository, and git's view on the host
// afterwards.
func TestProtectGitWorksInside(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	p := w.proj
	w.mustHost(p, gitInit+`git add -A && git commit -qm one && git init -q --bare -b main up.git && git push -q up.git main && git remote add up ./up.git`)
	// Upstream moves on (on the host), so the fetch inside has something to fetch.
	w.mustHost(filepath.Dir(p), `git clone -q proj/up.git other && cd other && git config user.name o && git config user.email o@e && echo up > up.txt && git add up.txt && git commit -qm upstream && git push -q origin main`)
	r := w.sh(`set -e
git checkout -q -b feature && echo f > f.txt && git add f.txt && git commit -qm feature
git fetch -q up && git rebase -q up/main && git branch -q topic && git log --format=%s | tr '\n' ' ' && echo OK`)
	if r.code != 0 || !strings.Contains(r.stdout, "OK") {
		t.Fatalf("git inside: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "feature upstream one") {
		t.Errorf("history inside after rebase: %q", r.stdout)
	}
	out := w.mustHost(p, `git log --format=%s feature && git branch --list topic && git status --short`)
	if !strings.Contains(out, "feature\nupstream\none") || !strings.Contains(out, "topic") {
		t.Errorf("on the host:\n%s", out)
	}
	// Writing the protected config fails inside, with git's own error.
	r = w.sh(`git config user.name evil; echo rc=$?`)
	if !strings.Contains(r.stdout, "rc=") || strings.Contains(r.stdout, "rc=0") {
		t.Errorf("git config wrote inside: %q %q", r.stdout, r.stderr)
	}
}

// The working directory is a linked worktree whose git directory (and the common one)
// lie outside it: git needs them writable (objects, refs, index, HEAD, logs), the
// protected parts stay read-only.
func TestProtectWorktreeOutside(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	m := w.markers()
	main := w.sibling("main")
	wt := filepath.Join(filepath.Dir(w.proj), "wt")
	w.mustHost(main, gitInit+`git commit -q --allow-empty -m one && git worktree add -q `+wt)
	w.proj = wt
	r := w.sh(`set -e
echo x > x.txt && git add x.txt && git commit -qm in-worktree && git branch -q wt-topic
for f in ` + main + `/.git/config ` + main + `/.git/hooks/pre-commit ` + main + `/.git/worktrees/wt/commondir; do
  (printf '[core]\n\tfsmonitor = "touch ` + m + `/wt; false"\n' >> $f) 2>/dev/null && echo WROTE $f || true
done
echo OK`)
	if r.code != 0 || !strings.Contains(r.stdout, "OK") || strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("worktree: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.mustHost(main, `git status >/dev/null && git log --format=%s wt | grep -qx in-worktree && git branch --list wt-topic | grep -q wt-topic`)
	w.mustHost(wt, `git status >/dev/null`)
	w.noMarkers(m, "worktree")
}

// A superproject with a submodule: commit in both inside; the submodule's git directory
// (.git/modules/sub) keeps its config and hooks read-only.
func TestProtectSubmodule(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	m := w.markers()
	lib := w.sibling("lib")
	w.mustHost(lib, gitInit+`git commit -q --allow-empty -m lib`)
	w.mustHost(w.proj, gitInit+`git add -A && git commit -qm one && git -c protocol.file.allow=always submodule add -q `+lib+` sub && git commit -qm sub`)
	r := w.sh(`set -e
cd sub && git config user.name op && echo CONFIG-WROTE || true
git -c user.name=op -c user.email=op@example.com commit -q --allow-empty -m in-sub
(git config core.fsmonitor "touch ` + m + `/sub; false") 2>/dev/null && echo WROTE || true
(printf '#!/bin/sh\ntouch ` + m + `/subhook\n' > ../.git/modules/sub/hooks/post-checkout) 2>/dev/null && echo WROTE-HOOK || true
cd .. && git add sub && git commit -qm bump-sub && echo OK`)
	if r.code != 0 || !strings.Contains(r.stdout, "OK") || strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("submodule: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.mustHost(filepath.Join(w.proj, "sub"), `git status >/dev/null && git log --format=%s | grep -qx in-sub && git checkout -q -b y`)
	w.mustHost(w.proj, `git status >/dev/null && git log --format=%s | grep -qx bump-sub`)
	w.noMarkers(m, "submodule")
}

// A repository whose core.hooksPath names a directory in the project (.githooks here,
// absent at launch): box puts an empty read-only directory there, so the sandbox cannot
// fill it, and the host's next commit runs nothing.
func TestProtectHooksPathDir(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	m := w.markers()
	w.mustHost(w.proj, gitInit+`git config core.hooksPath .githooks && git add -A && git commit -qm one`)
	r := w.sh(`mkdir -p .githooks; printf '#!/bin/sh\ntouch ` + m + `/githooks\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit && echo PLANTED; rm -rf .githooks; mv .githooks .gh2 && echo MOVED; exit 0`)
	if strings.Contains(r.stdout, "PLANTED") || strings.Contains(r.stdout, "MOVED") {
		t.Fatalf("the hooksPath directory took a plant: %s %s", r.stdout, r.stderr)
	}
	w.mustHost(w.proj, `git commit -q --allow-empty -m host`)
	w.noMarkers(m, "hooksPath")
	if fi, err := os.Stat(filepath.Join(w.proj, ".githooks")); err != nil || !fi.IsDir() {
		t.Errorf("the placeholder directory: %v", err)
	}
}

// A hook that links into the tree (.git/hooks/pre-commit -> ../../scripts/pre-commit, a
// common setup): hooks/ is read-only, and the script it runs must be too, else the
// host's next commit runs what the sandbox wrote there (review finding, session 4).
func TestProtectHookLinkTarget(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	m := w.markers()
	w.mustHost(w.proj, gitInit+`mkdir scripts && printf '#!/bin/sh\nexit 0\n' > scripts/pre-commit && chmod +x scripts/pre-commit && `+
		`ln -s ../../scripts/pre-commit .git/hooks/pre-commit && git add -A && git commit -qm one`)
	r := w.sh(`printf '#!/bin/sh\ntouch ` + m + `/hooklink\n' > scripts/pre-commit && echo PLANTED; mv scripts scripts.old && echo MOVED; exit 0`)
	if strings.Contains(r.stdout, "PLANTED") || strings.Contains(r.stdout, "MOVED") {
		t.Fatalf("the hook's target took a plant: %s %s", r.stdout, r.stderr)
	}
	w.mustHost(w.proj, `git commit -q --allow-empty -m host`)
	w.noMarkers(m, "hooklink")

	// The entry dropped: the same plant runs on the host's next commit.
	w.write(filepath.Join(w.home, ".config/box/profiles/open.toml"), `protect_drop = ["git:hook-link"]`+"\n")
	r = w.sh(`printf '#!/bin/sh\ntouch `+m+`/hooklink\n' > scripts/pre-commit && echo PLANTED`, "--profile", "open")
	if !strings.Contains(r.stdout, "PLANTED") {
		t.Fatalf("dropped, the plant failed: %s %s", r.stdout, r.stderr)
	}
	w.mustHost(w.proj, `git commit -q --allow-empty -m host2`)
	if _, err := os.Stat(filepath.Join(m, "hooklink")); err != nil {
		t.Errorf("with git:hook-link dropped the host's commit did not run the plant: %v", err)
	}
}

// The protection holds during the run, not only after it: while the sandbox is still
// running (it waits for the host's go-ahead), the host's git, in another "terminal", runs
// nothing the sandbox tried to plant, including where nothing existed at launch
// (commondir, hooks/ of a repository that had none).
func TestProtectDuringRun(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	m := w.markers()
	p := w.proj
	w.mustHost(p, gitInit+`git add -A && git commit -qm one && rm -rf .git/hooks`)
	ready, goOn := filepath.Join(p, ".ready"), filepath.Join(p, ".go")
	c := w.cmd("run", "-y", "--", "sh", "-c", `
mkdir -p .evil && git init -q .evil/w && git -C .evil/w config core.fsmonitor "touch `+m+`/during-commondir; false"
printf '%s/.evil/w/.git\n' "$PWD" > .git/commondir
mkdir -p .git/hooks; printf '#!/bin/sh\ntouch `+m+`/during-hook\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
git config core.fsmonitor "touch `+m+`/during-fsmonitor; false"
touch .ready
while [ ! -e .go ]; do sleep 0.05; done`)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	defer func() {
		w.write(goOn, "")
		if err := <-done; err != nil {
			t.Errorf("box run: %v\n%s", err, out.String())
		}
		// After the run the temporary commondir placeholder is gone.
		if _, err := os.Lstat(filepath.Join(p, ".git", "commondir")); err == nil {
			t.Error("commondir left after the run")
		}
	}()
	for { // wait for the condition: the sandbox says its plants are tried
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("sandbox ended early (%v):\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The sandbox is running, its plants tried: the host's git, now.
	w.mustHost(p, `git status >/dev/null && git commit -q --allow-empty -m during && git rev-parse --git-common-dir`)
	w.noMarkers(m, "during the run")
	if b, _ := os.ReadFile(filepath.Join(p, ".git", "commondir")); string(b) != ".\n" {
		t.Errorf("commondir during the run = %q, want the placeholder", b)
	}
}
