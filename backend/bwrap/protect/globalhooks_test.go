package protect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// An absolute global core.hooksPath in the working directory (~/dotfiles/githooks) holds
// the hooks of every repository on the host: protected whether or not the working
// directory is a repository, and whatever hooks path its own repository sets. A hostile
// review (session 18) ran box in such a directory that was no repository, and in a
// dotfiles repository with core.hooksPath = .husky: the sandbox added
// githooks/post-checkout and the host's next git checkout, anywhere, ran it.
func TestGlobalHooksPathInWorkdir(t *testing.T) {
	home := realTemp(t)
	wd := filepath.Join(home, "dotfiles")
	os.MkdirAll(filepath.Join(wd, "githooks"), 0o755)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = ~/dotfiles/githooks\n"), 0o644)
	want := filepath.Join(wd, "githooks")
	if tree := Scan(wd, home, Options{}, nil); !slices.Contains(tree.HooksPaths, want) {
		t.Errorf("no repository: HooksPaths %q, want %s", tree.HooksPaths, want)
	}
	os.MkdirAll(filepath.Join(wd, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(wd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.MkdirAll(filepath.Join(wd, ".git", "objects"), 0o755)
	os.MkdirAll(filepath.Join(wd, ".git", "refs"), 0o755)
	os.WriteFile(filepath.Join(wd, ".git", "config"), []byte("[core]\n\thooksPath = .husky\n"), 0o644)
	tree := Scan(wd, home, Options{}, nil)
	if !slices.Contains(tree.HooksPaths, want) {
		t.Errorf("a repository with its own hooks path: HooksPaths %q, want %s", tree.HooksPaths, want)
	}
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.ReadOnly(), want) {
		t.Errorf("%s is not read-only: %q", want, s.ReadOnly())
	}
}
