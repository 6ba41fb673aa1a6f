package bwrap_test

// The post-run audit reads the protected set: a project file absent at launch (so not
// bound read-only, and given no placeholder) that the run creates is moved aside after it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxPostRunAuditProtectedFiles(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	marks := w.markerDir()
	r := w.sh(`printf 'touch ` + marks + `/envrc\n' > .envrc
mkdir -p .vscode && printf '{"tasks":[{"command":"touch ` + marks + `/vscode","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json
mkdir -p .claude && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch ` + marks + `/claude"}]}]}}' > .claude/settings.json`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{".envrc", ".vscode/tasks.json", ".claude/settings.json"} {
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("%s is still in place", f)
		}
	}
}
