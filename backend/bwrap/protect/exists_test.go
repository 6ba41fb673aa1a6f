package protect

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// existing answers from listings what lstat answered path by path: every kind of
// parent (absent, a file, a link to a directory, a directory listed by the walk or not,
// one the operator cannot list) gives the same map.
func TestExistingIsLstat(t *testing.T) {
	d := t.TempDir()
	mk := func(p string) { os.MkdirAll(filepath.Join(d, p), 0o755) }
	wr := func(p string) { os.WriteFile(filepath.Join(d, p), nil, 0o644) }
	mk("top/.claude/hooks")
	wr("top/.claude/settings.json")
	wr("top/.envrc")
	wr("top/.config") // a file where a directory is looked for
	mk("elsewhere/mise")
	wr("elsewhere/mise/config.toml")
	wr("elsewhere/mise.toml")
	os.Symlink(filepath.Join(d, "elsewhere"), filepath.Join(d, "top/.jj")) // a link parent
	os.Symlink("nowhere", filepath.Join(d, "top/.vscode"))                 // dangling
	mk("top/.hg")
	wr("top/.hg/hgrc")
	unix.Mkfifo(filepath.Join(d, "top/.hg/sharedpath"), 0o644)
	mk("top/.idea/a")
	wr("top/.idea/a/x")
	os.Chmod(filepath.Join(d, "top/.idea"), 0o300) // cannot be listed (as root: can)
	var paths []string
	for _, rel := range []string{".claude", ".claude/hooks", ".claude/settings.json", ".claude/settings.local.json", ".claude/agents",
		".envrc", ".mcp.json", ".npmrc", ".config", ".config/mise.toml", ".config/lefthook.yml", ".config/mise",
		".jj", ".jj/mise", ".jj/mise/config.toml", ".jj/mise.toml", ".jj/absent", ".vscode", ".vscode/tasks.json",
		".hg", ".hg/hgrc", ".hg/sharedpath", ".hg/hgrc-not-shared", ".idea", ".idea/a", ".idea/a/x", ".idea/b", ".idea/c",
		".absent", ".absent/a", ".absent/b", ".absent/c/d"} {
		paths = append(paths, filepath.Join(d, "top", rel))
	}
	slices.Sort(paths)
	want := map[string]FileKind{}
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil {
			want[p] = kindOf(fi)
		}
	}
	buf := make([]byte, 32<<10)
	for _, walked := range []bool{false, true} {
		listings := map[string]map[string]FileKind{}
		if walked {
			ents, err := readDir(filepath.Join(d, "top"), buf)
			if err != nil {
				t.Fatal(err)
			}
			listings[filepath.Join(d, "top")] = kindsOf(ents)
		}
		if got := existing(paths, listings, buf); !maps.Equal(got, want) {
			t.Errorf("walked=%v:\n got %v\nwant %v", walked, got, want)
		}
	}
}
