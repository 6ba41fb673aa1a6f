package bwrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// A hostile box run, as the unprivileged user, leaves a rebase stopped at a break with an
// exec line still to do: git status on the host says "use git rebase --continue", which
// would run it. The audit moves the todo list aside; the host's --continue runs nothing.
func TestSandboxPostRunAuditRebaseTodo(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"commit", "-qm", "one"}, {"commit", "-q", "--allow-empty", "-m", "two"}} {
		if out, err := w.hostGit(w.proj, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	marks := w.markerDir()
	r := w.sh(`export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com
GIT_SEQUENCE_EDITOR="printf 'break\nexec id >` + marks + `/rebase\n' >" git rebase -q -i HEAD~1
test -f .git/rebase-merge/git-rebase-todo && echo stopped`)
	if r.code != 0 || !strings.Contains(r.stdout, "stopped") {
		t.Fatalf("the hostile rebase did not stop: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: .git/rebase-merge/git-rebase-todo:") || !strings.Contains(r.stderr, "rebase --continue") {
		t.Errorf("the audit does not report the todo list:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, ".git/rebase-merge/git-rebase-todo")); err == nil {
		t.Error("the todo list is still in place")
	}
	out, _ := w.hostGit(w.proj, "rebase", "--continue")
	if m := w.marks(marks); len(m) != 0 {
		t.Errorf("the host's git rebase --continue ran what the sandbox planted: markers %v\n%s", m, out)
	}
}
