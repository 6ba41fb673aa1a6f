package protect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A dotfiles repository as the working directory: what the home links to (a file, a
// directory, through a relative link, from ~/.config and ~/.local/bin) is read-only
// inside, with its parents pinned; a link elsewhere, or to the working directory itself,
// is not a fact.
func TestHomeLinks(t *testing.T) {
	home := realTemp(t)
	wd := filepath.Join(home, "dotfiles")
	for _, d := range []string{"shell", "nvim", "bin", "fish", ".config/fish", ".local/bin"} {
		base := wd
		if strings.HasPrefix(d, ".") {
			base = home
		}
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	for _, f := range []string{"shell/bashrc", "gitconfig", "bin/tool", "unlinked", "fish/config.fish", "git-extra.inc"} {
		os.WriteFile(filepath.Join(wd, f), []byte("x\n"), 0o644)
	}
	os.WriteFile(filepath.Join(home, "elsewhere"), nil, 0o644)
	for link, target := range map[string]string{
		".bashrc":          "dotfiles/shell/bashrc", // relative
		".gitconfig":       filepath.Join(wd, "gitconfig"),
		".config/nvim":     filepath.Join(wd, "nvim"),
		".local/bin/tool":  filepath.Join(wd, "bin/tool"),
		".profile":         "elsewhere",
		".whole":           "dotfiles", // the working directory itself: not protectable
		".config/dangling": filepath.Join(wd, "gone"),
		// stow without folding: a link per file, a level down in ~/.config
		".config/fish/config.fish": "../../dotfiles/fish/config.fish",
	} {
		if err := os.Symlink(target, filepath.Join(home, link)); err != nil {
			t.Fatal(err)
		}
	}
	// The global git config (here the linked gitconfig) includes a file of the tree.
	os.WriteFile(filepath.Join(wd, "gitconfig"), []byte("[include]\n\tpath = ~/dotfiles/git-extra.inc\n"), 0o644)
	tree := Scan(wd, home, Options{}, nil)
	want := []string{filepath.Join(wd, "bin/tool"), filepath.Join(wd, "fish/config.fish"), filepath.Join(wd, "git-extra.inc"),
		filepath.Join(wd, "gitconfig"), filepath.Join(wd, "gone"), filepath.Join(wd, "nvim"), filepath.Join(wd, "shell/bashrc")}
	if !slices.Equal(tree.HomeLinks, want) {
		t.Fatalf("HomeLinks %q, want %q", tree.HomeLinks, want)
	}
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ro := s.ReadOnly()
	// The dangling link's target is absent: nothing to bind, the post-run audit watches it.
	if !slices.Contains(s.Paths(), filepath.Join(wd, "gone")) || slices.Contains(ro, filepath.Join(wd, "gone")) {
		t.Errorf("the dangling link's target: paths %q, read-only %q", s.Paths(), ro)
	}
	for _, p := range want {
		if p == filepath.Join(wd, "gone") {
			continue
		}
		if !slices.Contains(ro, p) {
			t.Errorf("%s is not read-only: %q", p, ro)
		}
	}
	if slices.Contains(ro, filepath.Join(wd, "unlinked")) {
		t.Error("a file no link names is read-only")
	}
	// shell/ is pinned: renamed away with a look-alike in its place, ~/.bashrc would
	// name the look-alike.
	for _, d := range []string{filepath.Join(wd, "shell"), filepath.Join(wd, "bin")} {
		if !slices.Contains(s.Pins, d) {
			t.Errorf("%s is not pinned: %q", d, s.Pins)
		}
	}
	// Dropped by a user profile: not protected.
	s, _ = Build(tree, Options{Drop: []string{"home:link"}})
	if slices.Contains(s.ReadOnly(), filepath.Join(wd, "gitconfig")) {
		t.Error("home:link dropped, still read-only")
	}
}

// What the home names in a directory of the tree that does not exist yet: a dangling
// link into it (~/.bashrc.local, sourced if present) and a missing file the global git
// config includes (git skips it until it exists). The sandbox can make the directory and
// the file, and the host's shell and every git command then obey them: both are facts
// (absent, watched by the post-run audit). A hostile review (session 18) planted both,
// with no finding.
func TestHomeLinksMissingDirectory(t *testing.T) {
	home := realTemp(t)
	wd := filepath.Join(home, "dotfiles")
	os.MkdirAll(wd, 0o755)
	if err := os.Symlink("dotfiles/private/bashrc.local", filepath.Join(home, ".bashrc.local")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = ~/dotfiles/gitconfig.local\n\tpath = ~/dotfiles/git/extra.inc\n"), 0o644)
	tree := Scan(wd, home, Options{}, nil)
	want := []string{filepath.Join(wd, "git/extra.inc"), filepath.Join(wd, "gitconfig.local"), filepath.Join(wd, "private/bashrc.local")}
	if !slices.Equal(tree.HomeLinks, want) {
		t.Fatalf("HomeLinks %q, want %q", tree.HomeLinks, want)
	}
	wantWatched(t, tree, want)
}

// What else the host reads or runs from a dotfiles repository (hostile review, session
// 18): a link a level down in a dot-directory of the home (stow links ~/.ssh/config a
// file at a time where ~/.ssh exists: ssh runs its Match exec lines), one in ~/bin, the
// template directory the global git config names (git clone copies its hooks into the
// new repository and runs them) are watched. A directory of the operator's PATH in the
// tree (the shell runs bin/git by name) is said, not protected (builds write there), as
// are a relative PATH entry and a link to the working directory itself.
func TestHomeLinksDotDirsTemplatePath(t *testing.T) {
	home := realTemp(t)
	wd := filepath.Join(home, "dotfiles")
	for _, d := range []string{"ssh", "scripts", "bin", "aws", ".ssh", ".aws/sso", "../bin"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
	}
	os.WriteFile(filepath.Join(wd, "ssh/config"), []byte("Host *\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "scripts/x"), nil, 0o755)
	os.WriteFile(filepath.Join(wd, "aws/deep"), nil, 0o644)
	for link, target := range map[string]string{
		".ssh/config":     "../dotfiles/ssh/config",
		"bin/x":           filepath.Join(wd, "scripts/x"),
		".aws/sso/deep":   filepath.Join(wd, "aws/deep"), // two levels down: not looked at
		".config/whole":   wd,
		"shortcut":        wd,              // a plain link at the home's top: no configuration, nothing said
		".ssh/known_host": "/etc/hostname", // outside: nothing
	} {
		os.MkdirAll(filepath.Join(home, filepath.Dir(link)), 0o755)
		if err := os.Symlink(target, filepath.Join(home, link)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[init]\n\ttemplateDir = ~/dotfiles/git_template\n"), 0o644)
	tree := Scan(wd, home, Options{Path: []string{filepath.Join(wd, "bin"), "/usr/bin", "."}}, nil)
	want := []string{filepath.Join(wd, "git_template"), filepath.Join(wd, "scripts/x"), filepath.Join(wd, "ssh/config")}
	if !slices.Equal(tree.HomeLinks, want) {
		t.Fatalf("HomeLinks %q, want %q", tree.HomeLinks, want)
	}
	notes := strings.Join(tree.Notes, "\n")
	if strings.Contains(notes, "~/shortcut") {
		t.Errorf("a plain shortcut to the working directory was warned of:\n%s", notes)
	}
	for _, n := range []string{`relative entry "."`, "~/.config/whole (a link) is the working directory itself", "your PATH holds " + filepath.Join(wd, "bin") + ", in the working directory"} {
		if !strings.Contains(notes, n) {
			t.Errorf("no note saying %q:\n%s", n, notes)
		}
	}
	wantWatched(t, tree, want)
}

// wantWatched fails t unless the protected set built from tree holds every path of want.
func wantWatched(t *testing.T, tree Tree, want []string) {
	t.Helper()
	s, err := Build(tree, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range want {
		if !slices.Contains(s.Paths(), p) {
			t.Errorf("%s is not watched: %q", p, s.Paths())
		}
	}
}
