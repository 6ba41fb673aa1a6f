package postrun

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// A hostile "run" done right here (no sandbox: the audit is what is under test), against
// real git: every class of finding is caught, neutralised, and afterwards the host's git
// runs nothing, while nothing of the user's is lost.
func TestAuditRealGit(t *testing.T) {
	testenv.RequireTool(t, "git")
	base := t.TempDir()
	wd := filepath.Join(base, "proj")
	home := filepath.Join(base, "home")
	markers := filepath.Join(base, "markers")
	for _, d := range []string{wd, home, markers} {
		os.MkdirAll(d, 0o755)
	}
	git := func(dir string, args ...string) (string, error) {
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x",
			"GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x", "PAGER=cat", "GIT_PAGER=cat"}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	must := func(dir string, args ...string) {
		t.Helper()
		if out, err := git(dir, args...); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	// The user's project: a repository with its own settings, a pre-existing nested
	// repository, and a worktree pointer that must keep working.
	must(wd, "init", "-q")
	must(wd, "config", "core.pager", "less -R") // the user's own: never touched
	must(wd, "config", "remote.origin.url", "https://example.com/x.git")
	write(filepath.Join(wd, "README"), "user file\n", 0o644)
	must(wd, "add", "README")
	must(wd, "commit", "-qm", "one")
	must(wd, "init", "-q", "old")
	write(filepath.Join(wd, ".envrc"), "export A=1\n", 0o644)
	write(filepath.Join(wd, "team.cfg"), "[alias]\n\tlg = log --oneline\n", 0o644)
	must(wd, "config", "include.path", "../team.cfg") // the user's own include
	userConfig, _ := os.ReadFile(filepath.Join(wd, ".git/config"))

	in := Input{Workdir: wd, Home: home, Protected: []Guard{
		{Path: filepath.Join(wd, ".envrc"), Runs: "direnv runs it when you enter the directory"},
		{Path: filepath.Join(wd, ".vscode"), Runs: "VS Code runs its tasks on folder open"},
	}}
	before := Take(in)
	if before.Incomplete != "" || len(before.Repos) != 2 {
		t.Fatalf("before: %q, repos %v", before.Incomplete, sortedKeys(before.Repos))
	}

	// The run: everything the issue lists, and the agent's legitimate work.
	m := func(n string) string { return filepath.Join(markers, n) }
	must(wd, "config", "core.fsmonitor", "id >"+m("top")+"; false")
	must(wd, "config", "alias.st", "!id >"+m("alias"))
	must(wd, "config", "alias.co", "checkout") // not executing: stays
	must(wd, "config", "filter.x.smudge", "id >"+m("filter"))
	must(wd, "config", "--add", "include.path", "../planted.cfg")
	write(filepath.Join(wd, "team.cfg"), "[alias]\n\tlg = log --oneline\n[core]\n\tpager = id >"+m("team")+"\n", 0o644)
	// A worktree made inside is audited key by key, not moved: commits there keep working.
	must(wd, "worktree", "add", "-q", "wt2")
	must(wd, "config", "extensions.worktreeConfig", "true")
	write(filepath.Join(wd, ".git/worktrees/wt2/config.worktree"), "[core]\n\tfsmonitor = id >"+m("wt2")+"; false\n", 0o644)
	write(filepath.Join(wd, "planted.cfg"), "[core]\n\teditor = id >"+m("include")+"\n", 0o644)
	must(wd, "config", "branch.main.description", "agent's harmless note")
	write(filepath.Join(wd, ".git/hooks/post-checkout"), "#!/bin/sh\nid >"+m("hook")+"\n", 0o755)
	must(wd, "init", "-q", "vendor/lib")
	must(filepath.Join(wd, "vendor/lib"), "config", "core.fsmonitor", "id >"+m("m3")+"; false")
	must(filepath.Join(wd, "vendor/lib"), "config", "alias.x", "!id")
	// Runs wherever git takes the directory for a repository: the kept copy too.
	must(filepath.Join(wd, "vendor/lib"), "config", "alias.st", "!id >"+m("kept"))
	must(filepath.Join(wd, "vendor/lib"), "-c", "core.fsmonitor=false", "commit", "-q", "--allow-empty", "-m", "lib")
	// A directory shaped like a git directory, under a directory named as a file git reads.
	write(filepath.Join(wd, "vendor/lib/.git/info/config/x/HEAD"), "ref: refs/heads/main\n", 0o644)
	write(filepath.Join(wd, "vendor/lib/.git/info/config/x/config"), "[alias]\n\tst = !id >"+m("deep")+"\n", 0o644)
	os.MkdirAll(filepath.Join(wd, "vendor/lib/.git/info/config/x/objects"), 0o755)
	os.MkdirAll(filepath.Join(wd, "vendor/lib/.git/info/config/x/refs"), 0o755)
	must(filepath.Join(wd, "vendor/lib"), "-c", "core.fsmonitor=false", "worktree", "add", "-q", filepath.Join(base, "lib-wt"))
	write(filepath.Join(wd, "vendor/lib/code.go"), "package lib\n", 0o644)
	write(filepath.Join(wd, "bare/HEAD"), "ref: refs/heads/main\n", 0o644)
	os.MkdirAll(filepath.Join(wd, "bare/objects"), 0o755)
	os.MkdirAll(filepath.Join(wd, "bare/refs"), 0o755)
	write(filepath.Join(wd, "bare/config"), "[core]\n\tpager = id >"+m("bare")+"\n", 0o644)
	write(filepath.Join(wd, "bare/notes.txt"), "agent's notes\n", 0o644)
	// git takes objects/ and refs/ through links as well.
	write(filepath.Join(wd, "linked/HEAD"), "ref: refs/heads/main\n", 0o644)
	os.Symlink(filepath.Join(wd, "bare/objects"), filepath.Join(wd, "linked/objects"))
	os.Symlink(filepath.Join(wd, "bare/refs"), filepath.Join(wd, "linked/refs"))
	write(filepath.Join(wd, "linked/config"), "[core]\n\tpager = id >"+m("linked")+"\n", 0o644)
	write(filepath.Join(wd, "wt/.git"), "gitdir: ../elsewhere\n", 0o644)
	write(filepath.Join(wd, ".envrc"), "id >"+m("envrc")+"\n", 0o644)
	write(filepath.Join(wd, ".vscode/tasks.json"), `{"runOn":"folderOpen"}`, 0o644)
	must(wd, "add", "README", "planted.cfg", "vendor/lib/code.go")
	must(wd, "-c", "core.fsmonitor=false", "commit", "-qm", "agent's work")

	// (git add ran the fsmonitor already: inside the sandbox, that is its own business.)
	os.RemoveAll(markers)
	os.MkdirAll(markers, 0o755)
	after := Take(in)
	findings := Diff(before, after)
	q := filepath.Join(base, "quarantine")
	r := Neutralise(before, findings, q, time.Unix(1700000000, 0))
	var out bytes.Buffer
	r.Print(&out)
	t.Logf("audit:\n%s", out.String())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range r.Findings {
		rel, _ := filepath.Rel(wd, f.Path)
		got[f.Kind+" "+rel+" "+f.Key] = true
		if len(f.Kept) == 0 || f.Restore == "" || f.Runs == "" {
			t.Errorf("%+v: not kept, or no restore hint", f)
		}
	}
	want := []string{
		"config .git/config core.fsmonitor", "config .git/config alias.st", "config .git/config filter.x.smudge",
		"config .git/config include.path", "config team.cfg core.pager", "config .git/worktrees/wt2/config.worktree core.fsmonitor",
		"file .git/hooks/post-checkout ", "repo vendor/lib/.git ", "repo bare ", "repo linked ", "repo wt/.git ",
		"file .envrc ", "file .vscode/tasks.json ",
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("missing finding %q", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings %v, want exactly %v", sortedKeys(got), want)
	}

	// The host's git, everywhere the agent touched, runs nothing: nor in the
	// quarantine, where the operator reads what the run did (git log in a kept .git, or
	// in a linked worktree's git directory kept in it).
	dirs := []string{wd, filepath.Join(wd, "vendor/lib"), filepath.Join(wd, "bare"), filepath.Join(wd, "linked"), filepath.Join(wd, "wt2")}
	for _, f := range r.Findings {
		if strings.HasSuffix(f.Path, "vendor/lib/.git") {
			dirs = append(dirs, f.Kept[0], filepath.Join(f.Kept[0], "worktrees", "lib-wt"), filepath.Join(f.Kept[0], "info", "config", "x"),
				filepath.Join(f.Kept[0], "info", "config"+".box-quarantined", "x"))
		}
	}
	for _, dir := range dirs {
		git(base, "--git-dir="+dir, "st") // git 2.39 reads a named git directory's config without its HEAD
		git(dir, "status")
		git(dir, "log", "-1")
		git(dir, "st")
		git(dir, "checkout", "-q", "HEAD~0", "--", "README")
	}
	ents, _ := os.ReadDir(markers)
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the host ran planted commands: markers %v", names)
	}
	// A clean re-audit finds nothing more.
	if again := Diff(before, Take(in)); len(again) != 0 {
		t.Errorf("after neutralising, still: %+v", again)
	}

	// Nothing of the user's is lost: their own keys stay, the agent's harmless ones too,
	// the commit is in the history, every file is in place or in the quarantine.
	cfg, _ := os.ReadFile(filepath.Join(wd, ".git/config"))
	for _, s := range []string{"pager = less -R", "url = https://example.com/x.git", "co = checkout", "agent's harmless note"} {
		if !strings.Contains(string(cfg), s) {
			t.Errorf(".git/config lost %q:\n%s", s, cfg)
		}
	}
	if !bytes.HasPrefix(cfg, userConfig[:len(userConfig)-1]) && !strings.Contains(string(cfg), "[core]") {
		t.Errorf(".git/config mangled:\n%s", cfg)
	}
	if log, _ := git(wd, "log", "--format=%s"); !strings.Contains(log, "agent's work") {
		t.Errorf("the commit made during the run is gone: %q", log)
	}
	for _, f := range r.Findings {
		if f.Key == "include.path" && (len(f.Exec) != 1 || f.Exec[0].Name != "core.editor") {
			t.Errorf("the new include's finding does not list what it brings in: %+v", f.Exec)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "planted.cfg")); !strings.Contains(string(b), "editor") {
		t.Errorf("planted.cfg was edited, though removing the include neutralised it: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "team.cfg")); !strings.Contains(string(b), "lg = log --oneline") || strings.Contains(string(b), "pager") {
		t.Errorf("team.cfg: %q", b)
	}
	if out, err := git(filepath.Join(wd, "wt2"), "-c", "core.fsmonitor=false", "commit", "-q", "--allow-empty", "-m", "in wt2"); err != nil {
		t.Errorf("the worktree made inside no longer commits: %v %s", err, out)
	}
	for _, p := range []string{"vendor/lib/code.go", "bare/notes.txt", "README", "planted.cfg", "wt2/README"} {
		if _, err := os.Stat(filepath.Join(wd, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wd, ".envrc")); string(b) != "export A=1\n" {
		t.Errorf(".envrc not restored to the user's version: %q", b)
	}
	var man Report
	b, err := os.ReadFile(filepath.Join(r.Quarantine, "manifest.json"))
	if err != nil || json.Unmarshal(b, &man) != nil || len(man.Findings) != len(r.Findings) {
		t.Fatalf("manifest: %v\n%s", err, b)
	}
	for _, f := range man.Findings {
		for _, k := range f.Kept {
			if _, err := os.Lstat(k); err != nil {
				t.Errorf("kept %s: %v", k, err)
			}
		}
	}
	// The quarantined nested repository restores with its own hint, history intact.
	for _, f := range r.Findings {
		if strings.HasSuffix(f.Path, "vendor/lib/.git") {
			if out, err := exec.Command("sh", "-c", f.Restore).CombinedOutput(); err != nil {
				t.Fatalf("restore %q: %v %s", f.Restore, err, out)
			}
		}
	}
	if out, err := git(filepath.Join(wd, "vendor/lib"), "config", "core.fsmonitor"); err != nil || !strings.Contains(out, m("m3")) {
		t.Errorf("restored repository: %q %v", out, err)
	}
	if out, err := git(filepath.Join(wd, "vendor/lib"), "log", "--format=%s"); err != nil {
		t.Errorf("restored repository's history: %q %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(wd, "vendor/lib/.git/info/config/x/HEAD")); err != nil || string(b) != "ref: refs/heads/main\n" {
		t.Errorf("restored repository: info/config/x/HEAD %q %v", b, err)
	}
}

// Past a bound the audit says so and fails: it never calls a tree it did not read clean.
func TestAuditBound(t *testing.T) {
	wd := t.TempDir()
	for i := range 5 {
		os.MkdirAll(filepath.Join(wd, "d", string(rune('a'+i))), 0o755)
	}
	in := Input{Workdir: wd, Limits: Limits{Entries: 3}}
	s := Take(in)
	if !strings.Contains(s.Incomplete, "more than 3 entries") {
		t.Fatalf("incomplete = %q", s.Incomplete)
	}
	r := Audit(s, Take(in), t.TempDir(), time.Now())
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("Err() = %v", err)
	}
}

// A snapshot stopped by its bound before the run cannot tell which repositories are new;
// the birth time can: one born during the run is moved aside, one the snapshot did not
// reach (yours) is never touched.
func TestAuditIncompleteBefore(t *testing.T) {
	testenv.RequireTool(t, "git")
	wd := t.TempDir()
	for _, d := range []string{"old", "a/b/c"} {
		if out, err := exec.Command("git", "init", "-q", filepath.Join(wd, d)).CombinedOutput(); err != nil {
			t.Fatal(err, string(out))
		}
	}
	before := Take(Input{Workdir: wd, Limits: Limits{Entries: 1}})
	if before.Incomplete == "" || len(before.Repos) > 1 {
		t.Fatalf("before: %q, %d repos", before.Incomplete, len(before.Repos))
	}
	if out, err := exec.Command("git", "init", "-q", filepath.Join(wd, "new")).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	after := Take(Input{Workdir: wd})
	if after.Repos[filepath.Join(wd, "new/.git")].Born == 0 {
		t.Fatal("this filesystem gives no birth time")
	}
	r := Audit(before, after, t.TempDir(), time.Now())
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Kind+" "+f.Path)
	}
	if len(got) != 1 || got[0] != "repo "+filepath.Join(wd, "new/.git") {
		t.Errorf("findings %q, want only the new repository", got)
	}
	for _, d := range []string{"old/.git/HEAD", "a/b/c/.git/hooks"} {
		if _, err := os.Stat(filepath.Join(wd, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "incomplete") {
		t.Errorf("Err() = %v, want incomplete", r.Err())
	}
}

// A planted fifo or device where a config or hook should be never blocks the audit, and
// a config that is a link is moved aside, never written through.
func TestAuditHostileFiles(t *testing.T) {
	testenv.RequireTool(t, "git")
	wd := t.TempDir()
	outside := filepath.Join(t.TempDir(), "users.gitconfig")
	os.WriteFile(outside, []byte("[user]\n\tname = me\n"), 0o644)
	if out, err := exec.Command("git", "init", "-q", wd).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	in := Input{Workdir: wd}
	before := Take(in)
	os.MkdirAll(filepath.Join(wd, "a/.git"), 0o755)
	if err := syscallMkfifo(filepath.Join(wd, "a/.git/config")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(wd, ".git/config.worktree"))
	// The live config replaced by a link to a file outside, with a key appended there
	// (as if the link had been followed inside).
	os.WriteFile(outside, []byte("[user]\n\tname = me\n[core]\n\tpager = evil\n"), 0o644)
	cfg := filepath.Join(wd, ".git/config")
	os.Rename(cfg, cfg+".orig")
	os.Symlink(outside, cfg)
	// A link planted in the working directory to a git directory of yours outside, and a
	// pointer through it: what lies outside is never edited or moved.
	theirs := filepath.Join(t.TempDir(), "other.git")
	os.MkdirAll(filepath.Join(theirs, "hooks"), 0o755)
	os.WriteFile(filepath.Join(theirs, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(theirs, "config"), []byte("[core]\n\tpager = less\n"), 0o644)
	os.WriteFile(filepath.Join(theirs, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink(filepath.Dir(theirs), filepath.Join(wd, "link"))
	os.MkdirAll(filepath.Join(wd, "x"), 0o755)
	os.WriteFile(filepath.Join(wd, "x", ".git"), []byte("gitdir: ../link/other.git\n"), 0o644)
	after := Take(Input{Workdir: wd, Writable: []string{wd}})
	fs := Diff(before, after)
	r := Neutralise(before, fs, t.TempDir(), time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, f := range r.Findings {
		kinds[f.Kind+" "+filepath.Base(filepath.Dir(f.Path))+"/"+filepath.Base(f.Path)] = true
	}
	for _, f := range r.Findings {
		if strings.HasPrefix(f.Path, filepath.Dir(theirs)) {
			t.Errorf("a finding outside the working directory: %+v", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(theirs, "config")); string(b) != "[core]\n\tpager = less\n" {
		t.Errorf("the config outside was edited: %q", b)
	}
	if _, err := os.Stat(filepath.Join(theirs, "hooks", "pre-commit")); err != nil {
		t.Errorf("the hook outside was moved: %v", err)
	}
	for _, w := range []string{"repo a/.git", "config .git/config", "repo x/.git"} {
		if !kinds[w] {
			t.Errorf("missing %q in %v", w, sortedKeys(kinds))
		}
	}
	if b, _ := os.ReadFile(outside); !strings.Contains(string(b), "pager = evil") {
		t.Errorf("the file outside was written through the link: %q", b)
	}
	if fi, err := os.Lstat(cfg); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the link is still in place")
	}
	if !slices.ContainsFunc(r.Findings, func(f Finding) bool { return strings.Contains(f.Action, "link") }) {
		t.Errorf("no finding says the link was moved: %+v", r.Findings)
	}
}

func syscallMkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }

// A worktree pointer rewritten to name a repository the run made: the repository moves
// whole, the pointer is put back, and nothing inside the moved repository is a finding
// of its own (it could not be neutralised twice).
func TestAuditPointerIntoNewRepo(t *testing.T) {
	testenv.RequireTool(t, "git")
	wd := t.TempDir()
	run := func(dir string, args ...string) {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = []string{"HOME=" + wd, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x",
			"GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x"}
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v %s", args, err, out)
		}
	}
	run(wd, "init", "-q")
	run(wd, "commit", "-q", "--allow-empty", "-m", "one")
	run(wd, "worktree", "add", "-q", "wt")
	pointer, _ := os.ReadFile(filepath.Join(wd, "wt/.git"))
	in := Input{Workdir: wd}
	before := Take(in)
	run(wd, "init", "-q", ".evil/w")
	run(filepath.Join(wd, ".evil/w"), "config", "core.fsmonitor", "id; false")
	os.WriteFile(filepath.Join(wd, "wt/.git"), []byte("gitdir: ../.evil/w/.git\n"), 0o644)
	r := Audit(before, Take(in), t.TempDir(), time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		rel, _ := filepath.Rel(wd, f.Path)
		got = append(got, f.Kind+" "+rel)
	}
	if strings.Join(got, ", ") != "repo .evil/w/.git, pointer wt/.git" {
		t.Errorf("findings %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "wt/.git")); string(b) != string(pointer) {
		t.Errorf("wt/.git = %q, want the user's %q", b, pointer)
	}
}

// What a user profile drops from the protected set (protect_drop) the audit honours: the
// sandbox may then install hooks or set git config, and that is no finding; a new
// repository still is.
func TestAuditHonoursLoosening(t *testing.T) {
	testenv.RequireTool(t, "git")
	wd := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", wd).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	for _, c := range []struct {
		loosened []string
		want     string
	}{
		{nil, "repo new/.git, config .git/config core.pager, file .git/hooks/pre-commit"},
		{[]string{LooseHooks}, "repo new/.git, config .git/config core.pager"},
		{[]string{LooseHooks, LooseConfig}, "repo new/.git"},
	} {
		in := Input{Workdir: wd, Loosened: c.loosened}
		before := Take(in)
		exec.Command("git", "-C", wd, "config", "core.pager", "less -R").Run()
		os.WriteFile(filepath.Join(wd, ".git/hooks/pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		exec.Command("git", "init", "-q", filepath.Join(wd, "new")).Run()
		var got []string
		for _, f := range Diff(before, Take(in)) {
			rel, _ := filepath.Rel(wd, f.Path)
			got = append(got, strings.TrimSpace(f.Kind+" "+rel+" "+f.Key))
		}
		if strings.Join(got, ", ") != c.want {
			t.Errorf("loosened %q: %q, want %q", c.loosened, got, c.want)
		}
		exec.Command("git", "-C", wd, "config", "--unset", "core.pager").Run()
		os.Remove(filepath.Join(wd, ".git/hooks/pre-commit"))
		os.RemoveAll(filepath.Join(wd, "new"))
	}
}
