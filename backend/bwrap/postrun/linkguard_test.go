package postrun

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A protected path reached through a link the run made, to a place outside every root
// the audit judges (a hostile review linked .claude to the instance directory's
// ~/.claude, which the sandbox writes): the link is the finding and is moved aside, so
// the host's Claude Code no longer reads the sandbox's hooks as the project's settings.
// A link that was there before the run, unchanged, is no finding.
func TestProtectedPathThroughALink(t *testing.T) {
	base := t.TempDir()
	wd, outside, own := filepath.Join(base, "wd"), filepath.Join(base, "instance/.claude"), filepath.Join(base, "shared")
	for _, d := range []string{wd, outside, own} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The operator's own link, made before the run, to settings they keep elsewhere.
	if err := os.Symlink(own, filepath.Join(wd, ".config")); err != nil {
		t.Fatal(err)
	}
	in := Input{Workdir: wd, Home: base, Protected: []Guard{
		{Path: filepath.Join(wd, ".claude/settings.json"), Runs: "Claude Code on the host runs its hooks"},
		{Path: filepath.Join(wd, ".claude/commands"), Runs: "slash commands"},
		{Path: filepath.Join(wd, ".config/mise.toml"), Runs: "mise runs its hooks on cd"},
	}}
	before := Take(in)
	// The run: hooks where the sandbox's ~/.claude is, and .claude linked to it.
	if err := os.WriteFile(filepath.Join(outside, "settings.json"), []byte(`{"hooks":{"SessionStart":[]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wd, ".claude")); err != nil {
		t.Fatal(err)
	}
	after := Take(in)
	findings := Diff(before, after)
	r := Neutralise(before, findings, filepath.Join(base, "quarantine"), time.Unix(1700000000, 0))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range r.Findings {
		paths = append(paths, f.Path)
	}
	if len(paths) != 1 || paths[0] != filepath.Join(wd, ".claude") {
		t.Fatalf("findings %q, want the link %s alone", paths, filepath.Join(wd, ".claude"))
	}
	if _, err := os.Lstat(filepath.Join(wd, ".claude")); !os.IsNotExist(err) {
		t.Errorf("the link is still in the tree: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(wd, ".config")); err != nil {
		t.Errorf("the operator's own link was touched: %v", err)
	}
}
