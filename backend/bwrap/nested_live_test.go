package bwrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// box asked to launch inside one of its own sandboxes (an agent's wrapper calling box run
// in box run) refuses at once, by name, with what to do: before (session 19) it waited
// for ever for the outer run's hold on the tree.
func TestNestedRunRefused(t *testing.T) {
	w := newWorld(t)
	bin, err := os.ReadFile(w.box)
	if err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(w.proj, "boxbin")
	w.write(inner, string(bin))
	os.Chmod(inner, 0o755)
	c := w.cmd("run", "-y", "-q", "--", "./boxbin", "run", "-y", "-q", "--", "echo", "nest"+"ed")
	hung := time.AfterFunc(2*time.Minute, func() { c.Process.Kill() })
	r := w.collect(c)
	if !hung.Stop() {
		t.Fatalf("box run inside box run did not end: %q", r.stderr)
	}
	if r.code != 125 || strings.Contains(r.stdout, "nested") ||
		!strings.Contains(r.stderr, "box: error: this is already a box sandbox (BOX_SANDBOX=bwrap): box cannot launch another inside it\nbox: hint: the command runs sandboxed already: run it directly") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A launch warning naming a path the sandbox chose (a directory an earlier run made,
// named with an OSC sequence) reaches the operator's terminal escaped, never raw: before
// (session 19) the note on its .envrc's unresolvable load carried the sequence through.
func TestLaunchWarningEscaped(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.proj, "sub\x1b]52;c;ZWNobyBwd25lZA==\x07x")
	w.write(filepath.Join(dir, ".envrc"), "source_env $FOO\n")
	r := w.run("run", "-y", "-q", "--", "true")
	if r.code != 0 || strings.ContainsRune(r.stderr, '\x1b') || !strings.Contains(r.stderr, `sub\x1b]52;c;ZWNobyBwd25lZA==\x07x/.envrc loads "source_env $FOO"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// The allowlist tier's log for the agent lives in the template's state directory
// (codex's ~/.codex), as SANDBOX.md says: before (hostile review, session 19) box wrote
// it under ~/.claude of the instance directory, which a codex template has not, and the
// tier refused to start ("allowlist tier: .../.claude: no such file or directory").
func TestAllowlistLogInTemplateStateDir(t *testing.T) {
	w := newWorld(t)
	r := w.run("run", "--template", "codex", "-n", "allowlist", "--allow", "example.test", "-y", "-q", "--",
		"sh", "-c", `test -f ~/.codex/box-network.log && grep -c '~/.codex/box-network.log' ~/.codex/SANDBOX.md && test ! -e ~/.claude`)
	if r.code != 0 || strings.TrimSpace(r.stdout) == "0" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
