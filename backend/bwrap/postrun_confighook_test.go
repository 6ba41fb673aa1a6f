package bwrap_test

// git 2.54's configured hooks (hostile review, session 16): [hook "NAME"] event =
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
	plant := `set -e; cd node_modules/dep; printf '[hook "lint"]\n\tevent = pre-commit\n\tcommand = touch /tmp/pwn\n' >> .git/config`
	r := w.sh(plant)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	for _, k := range []string{"hook.lint.event = pre-commit", "hook.lint.command = touch /tmp/pwn"} {
		if !strings.Contains(r.stderr, "box: audit: node_modules/dep/.git/config: added "+k) {
			t.Errorf("the audit does not report %s", k)
		}
	}
	if b, _ := os.ReadFile(dep + "/.git/config"); strings.Contains(string(b), "command") || strings.Contains(string(b), "event") {
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
