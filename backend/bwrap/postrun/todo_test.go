package postrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// A rebase the sandbox leaves stopped, with an exec line still to do, is run by the host's
// git rebase --continue (git status says to run it): real git, the audit moves the todo
// list aside, and a rebase with nothing to run, or the user's own, is left to go on.
func TestAuditRebaseTodo(t *testing.T) {
	testenv.RequireTool(t, "git")
	base := t.TempDir()
	home := filepath.Join(base, "home")
	markers := filepath.Join(base, "markers")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(markers, 0o755)
	git := func(dir string, env []string, args ...string) (string, error) {
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x",
			"GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x", "GIT_EDITOR=true"}, env...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	// repo makes a project with two commits.
	repo := func(name string) string {
		t.Helper()
		wd := filepath.Join(base, name)
		os.MkdirAll(wd, 0o755)
		for i, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "one"}, {"commit", "-q", "--allow-empty", "-m", "two"}} {
			if out, err := git(wd, nil, args...); err != nil {
				t.Fatalf("%d git %q: %v\n%s", i, args, err, out)
			}
		}
		return wd
	}
	// stopped starts an interactive rebase that stops at a break, with todo after it.
	stopped := func(wd, todo string) {
		t.Helper()
		ed := "printf 'break\\n" + todo + "' >"
		out, err := git(wd, []string{"GIT_SEQUENCE_EDITOR=" + ed}, "rebase", "-q", "-i", "HEAD~1")
		if _, serr := os.Stat(filepath.Join(wd, ".git/rebase-merge/git-rebase-todo")); serr != nil {
			t.Fatalf("the rebase did not stop: %v %v\n%s", err, serr, out)
		}
	}
	mark := func(n string) string { return "exec id >" + filepath.Join(markers, n) + "\\n" }
	marked := func(n string) bool { _, err := os.Stat(filepath.Join(markers, n)); return err == nil }

	// The attack works: a host that carries on the planted rebase runs its exec line.
	control := repo("control")
	stopped(control, mark("control"))
	git(control, nil, "rebase", "--continue")
	if !marked("control") {
		t.Fatal("git rebase --continue did not run the planted exec line: the check below proves nothing")
	}

	wd := repo("proj")
	user := repo("user")
	stopped(user, mark("user")) // the user's own rebase, stopped before the run
	plain := repo("plain")
	for _, c := range []struct {
		wd      string
		finding bool
		run     func()
	}{
		{wd, true, func() { stopped(wd, mark("planted")) }},
		{user, false, func() {}},
		{plain, false, func() { stopped(plain, "") }},
	} {
		in := Input{Workdir: c.wd, Home: home}
		before := Take(in)
		c.run()
		findings := Diff(before, Take(in))
		if !c.finding {
			if len(findings) != 0 {
				t.Errorf("%s: findings %+v", c.wd, findings)
			}
			continue
		}
		todo := filepath.Join(c.wd, ".git/rebase-merge/git-rebase-todo")
		if len(findings) != 1 || findings[0].Kind != FindFile || findings[0].Path != todo || !strings.Contains(findings[0].Runs, "rebase --continue") {
			t.Fatalf("findings %+v", findings)
		}
		r := Neutralise(before, findings, filepath.Join(base, "quarantine"), time.Unix(1700000000, 0))
		if r.Failed() || len(r.Findings[0].Kept) != 1 {
			t.Fatalf("neutralise: %+v", r.Findings)
		}
		if b, err := os.ReadFile(r.Findings[0].Kept[0]); err != nil || !TodoExecs(b) {
			t.Errorf("the kept todo list: %q %v", b, err)
		}
		out, _ := git(c.wd, nil, "rebase", "--continue")
		if marked("planted") {
			t.Errorf("the host's git rebase --continue ran the planted exec line:\n%s", out)
		}
	}
	// The user's rebase and the plain one carry on as before: the user's exec is theirs.
	for _, d := range []string{user, plain} {
		if out, err := git(d, nil, "rebase", "--continue"); err != nil {
			t.Errorf("%s: git rebase --continue: %v\n%s", d, err, out)
		}
	}
	if !marked("user") {
		t.Error("the user's own exec line did not run")
	}
}

func TestTodoExecs(t *testing.T) {
	for s, want := range map[string]bool{
		"pick abc one\n":                  false,
		"# exec id\npick abc\n":           false,
		"pick abc\nexec id\n":             true,
		"  x id >/tmp/m\n":                true,
		"\texec\tid\r\n":                  true,
		"break\nlabel onto\nreset onto\n": false,
		"execute id\n":                    false, // git knows no such command: it stops there
	} {
		if got := TodoExecs([]byte(s)); got != want {
			t.Errorf("TodoExecs(%q) = %v, want %v", s, got, want)
		}
	}
}

// A relative core.hooksPath in the global git config makes every repository's .githooks
// its hooks: a hook added there during the run is a finding; a repository with a
// core.hooksPath of its own is judged by that.
func TestAuditGlobalHooksPath(t *testing.T) {
	testenv.RequireTool(t, "git")
	base := t.TempDir()
	home, wd := filepath.Join(base, "home"), filepath.Join(base, "proj")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(wd, 0o755)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
	if out, err := exec.Command("git", "init", "-q", wd).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	in := Input{Workdir: wd, Home: home}
	before := Take(in)
	hook := filepath.Join(wd, ".githooks", "pre-commit")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	os.WriteFile(hook, []byte("#!/bin/sh\nid\n"), 0o755)
	f := Diff(before, Take(in))
	if len(f) != 1 || f[0].Kind != FindFile || f[0].Path != hook || !strings.Contains(f[0].Runs, "global") {
		t.Fatalf("findings %+v", f)
	}
}
