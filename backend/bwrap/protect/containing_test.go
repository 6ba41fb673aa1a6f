package protect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// box run in a subdirectory of a repository: the host's git there runs while the sandbox
// does, so a core.hooksPath or an include the containing repository names inside the
// working directory is protected, and its parents pinned (a rename of scripts/ would
// take the bind with it).
func TestScanContainingRepo(t *testing.T) {
	testenv.RequireTool(t, "git")
	top := realTemp(t)
	git(t, top, "init", "-q")
	git(t, top, "config", "core.hooksPath", "tools/scripts/hooks")
	git(t, top, "config", "include.path", "../tools/team.gitconfig")
	wd := filepath.Join(top, "tools")
	os.MkdirAll(filepath.Join(wd, "scripts", "hooks"), 0o755)
	os.WriteFile(filepath.Join(wd, "team.gitconfig"), nil, 0o644)
	tree := Scan(wd, top, Options{}, nil)
	hooks := filepath.Join(wd, "scripts", "hooks")
	if !slices.Contains(tree.HooksPaths, hooks) || !slices.Contains(tree.Includes, filepath.Join(wd, "team.gitconfig")) {
		t.Fatalf("hooksPaths %q, includes %q", tree.HooksPaths, tree.Includes)
	}
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ro := s.ReadOnly(); !slices.Contains(ro, hooks) || !slices.Contains(ro, filepath.Join(wd, "team.gitconfig")) {
		t.Errorf("read-only %q", ro)
	}
	if !slices.Contains(s.Pins, filepath.Join(wd, "scripts")) {
		t.Errorf("scripts/ is not pinned: %q", s.Pins)
	}
}

// A relative core.hooksPath in the global git config names a directory in every work
// tree: the working directory's .githooks is protected (made empty where missing), and a
// repository's own core.hooksPath overrides it.
func TestScanGlobalHooksPath(t *testing.T) {
	testenv.RequireTool(t, "git")
	home := realTemp(t)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = .githooks\n"), 0o644)
	wd := filepath.Join(home, "proj")
	os.MkdirAll(wd, 0o755)
	git(t, wd, "init", "-q")
	own := filepath.Join(wd, "own")
	os.MkdirAll(own, 0o755)
	git(t, own, "init", "-q")
	git(t, own, "config", "core.hooksPath", "hooks-here")
	tree := Scan(wd, home, Options{}, nil)
	if !slices.Contains(tree.HooksPaths, filepath.Join(wd, ".githooks")) || !slices.Contains(tree.HooksPaths, filepath.Join(own, "hooks-here")) ||
		slices.Contains(tree.HooksPaths, filepath.Join(own, ".githooks")) {
		t.Fatalf("hooksPaths %q", tree.HooksPaths)
	}
}
