package bwrap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestHomeMountPoints(t *testing.T) {
	s := baseSpec()
	s.Mounts = []Mount{{Src: "/srv/data", Dst: "/data"}, {Src: "/srv/cache", Dst: "/home/op/.cache/x", RW: true}}
	s.Tools = append(s.Tools, Tool{Name: "claude", Path: "/home/op/.local/share/claude/versions/2"})
	got := HomeMountPoints(s)
	want := []string{".claude", ".cache/x", "src/proj", ".local/share/claude/versions/2"}
	if !slices.Equal(got, want) {
		t.Errorf("mount points %q, want %q", got, want)
	}
}

// A link the sandbox planted in its own persistent home, where box mounts the working
// directory or the agent's state, is removed before bwrap could follow it out.
func TestPrepareHomeRemovesPlantedLinks(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o700)
	home := filepath.Join(base, "boxhome")
	os.MkdirAll(home, 0o700)
	os.Symlink(outside, filepath.Join(home, "src"))     // ~/src -> outside: the workdir's path
	os.Symlink(outside, filepath.Join(home, ".claude")) // the state dir's mount point
	os.WriteFile(filepath.Join(home, "keep.txt"), nil, 0o600)
	s := baseSpec()
	s.HomeDir = home
	removed, err := PrepareHome(s)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{"~/.claude", "~/src"}) {
		t.Errorf("removed %q", removed)
	}
	for _, p := range []string{"src", ".claude"} {
		if _, err := os.Lstat(filepath.Join(home, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "keep.txt")); err != nil {
		t.Errorf("an unrelated file went: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("something was made outside: %v", ents)
	}
	// A file where a directory must go is refused, by name.
	os.WriteFile(filepath.Join(home, "src"), []byte("x"), 0o600)
	if _, err := PrepareHome(s); err == nil || !strings.Contains(err.Error(), "~/src") {
		t.Errorf("file in the way: err = %v", err)
	}
	// Without a persistent home there is nothing to do.
	s.HomeDir = ""
	if r, err := PrepareHome(s); r != nil || err != nil {
		t.Errorf("no box home: %v %v", r, err)
	}
}
