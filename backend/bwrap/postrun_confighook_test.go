package bwrap_test

// git 2.54's configured hooks and git 2.42's gc.recentObjectsHook (hostile review, session 16): [hook "NAME"] event =
// pre-commit, command = ... in a config the sandbox can write (a repository the protected
// set's scan does not reach, in node_modules) runs on the host's next git commit with
// git 2.54 or later; the audit, knowing only git 2.39's keys, said nothing.

import (
	"os"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxPostRunAuditConfigHook(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	dep := w.proj + "/node_modules/dep"
	w.write(dep+"/index.js", "\n")
	for _, dir := range []string{w.proj, dep} {
		for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "one"}} {
			if out, err := w.hostGit(dir, args...); err != nil {
				t.Fatal(args, err, out)
			}
		}
	}
	plant := `set -e; cd node_modules/dep; printf '[hook "lint"]\n\tevent = pre-commit\n\tcommand = touch /tmp/pwn\n[gc]\n\trecentObjectsHook = touch /tmp/pwn\n' >> .git/config`
	r := w.sh(plant)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	for _, k := range []string{"hook.lint.event = pre-commit", "hook.lint.command = touch /tmp/pwn", "gc.recentobjectshook = touch /tmp/pwn"} {
		if !strings.Contains(r.stderr, "box: audit: node_modules/dep/.git/config: added "+k) {
			t.Errorf("the audit does not report %s", k)
		}
	}
	if b, _ := os.ReadFile(dep + "/.git/config"); strings.Contains(string(b), "command") || strings.Contains(string(b), "event") || strings.Contains(string(b), "recentObjectsHook") {
		t.Errorf("the configured hook is still in the config:\n%s", b)
	}
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	w.withProtectionOff(t, "audit-config-hooks")
	if r := w.sh(plant); r.code != 0 || strings.Contains(r.stderr, "hook.lint") {
		t.Fatalf("with the keys off: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(dep + "/.git/config"); !strings.Contains(string(b), "command = touch /tmp/pwn") {
		t.Errorf("with the keys off the hook is not left (the test proves nothing):\n%s", b)
	}
}

// A repository below a path longer than PATH_MAX (hostile review, session 16): the
// audit's walk and access(2) failed with ENAMETOOLONG there and it said nothing. Now the
// directory it cannot reach is a finding (unread), moved aside whole.
func TestSandboxPostRunAuditPathTooLong(t *testing.T) {
	w := newWorld(t)
	plant := `python3 -c '
import os
for i in range(40):
    os.mkdir("d"*120); os.chdir("d"*120)
os.makedirs(".git/objects"); os.makedirs(".git/refs")
open(".git/HEAD", "w").write("ref: refs/heads/main\n")
open(".git/config", "w").write("[core]\n\tfsmonitor = touch /tmp/pwn\n")
'`
	r := w.sh(plant)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if !strings.Contains(r.stderr, "file name too long") || !strings.Contains(r.stderr, "moved aside whole") {
		t.Errorf("the audit does not report the tree it cannot reach")
	}
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	// What is left above the part moved aside holds no repository: the next run's audit
	// finds nothing.
	if r := w.sh("true"); r.code != 0 || strings.Contains(r.stderr, "box: audit:") {
		t.Errorf("the next run: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.RemoveAll(w.proj + "/" + strings.Repeat("d", 120)); err != nil {
		t.Fatal(err)
	}
	w.withProtectionOff(t, "audit-too-long")
	if r := w.sh(plant); r.code != 0 || strings.Contains(r.stderr, "box: audit:") {
		t.Errorf("with the check off the audit was not silent (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
}
