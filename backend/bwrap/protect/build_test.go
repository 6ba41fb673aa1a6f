package protect

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// facts builds a Tree whose Exists holds the given paths (a trailing / marks a directory,
// "@" a symlink) and every directory above them up to /.
func facts(t Tree, paths ...string) Tree {
	t.Exists = map[string]FileKind{}
	for _, p := range paths {
		k := File
		if q, ok := strings.CutSuffix(p, "/"); ok {
			p, k = q, Dir
		} else if q, ok := strings.CutSuffix(p, "@"); ok {
			p, k = q, Link
		}
		t.Exists[p] = k
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			if _, ok := t.Exists[d]; !ok {
				t.Exists[d] = Dir
			}
		}
	}
	return t
}

// plainRepo: a repository with a submodule, a nested repository and a linked worktree
// of its own inside the working directory, and some project files.
func plainRepo() Tree {
	return facts(Tree{
		Workdir:    "/w",
		Tops:       []string{"/w", "/w/vendor/lib", "/w/sub", "/w/wt"},
		GitDirs:    []GitDirFact{{Path: "/w/.git"}, {Path: "/w/.git/modules/sub", WorktreeConfig: true}, {Path: "/w/.git/worktrees/wt", Linked: true}},
		Pointers:   []string{"/w/sub/.git", "/w/wt/.git"},
		Nested:     []string{"/w/vendor/lib/.git"},
		HooksPaths: []string{"/w/.githooks"},
	},
		"/w/.git/hooks/", "/w/.git/hooks/pre-commit.sample", "/w/.git/config", "/w/.git/HEAD",
		"/w/.git/modules/sub/hooks/", "/w/.git/modules/sub/config",
		"/w/.git/worktrees/wt/commondir", "/w/.git/worktrees/wt/gitdir",
		"/w/vendor/lib/.git/config", "/w/sub/.git", "/w/wt/.git",
		"/w/.envrc", "/w/.vscode/", "/w/.vscode/tasks.json", "/w/.claude/settings.json", "/w/.claude/commands/",
		"/w/vendor/lib/.envrc")
}

// linkedWorktree: the working directory is a linked worktree whose common directory lies
// outside it.
func linkedWorktree() Tree {
	return facts(Tree{
		Workdir:  "/w",
		Tops:     []string{"/w"},
		GitDirs:  []GitDirFact{{Path: "/m/.git/worktrees/w", Linked: true}, {Path: "/m/.git"}},
		Pointers: []string{"/w/.git"},
		Binds:    []string{"/m/.git"},
	},
		"/w/.git", "/m/.git/hooks/", "/m/.git/config", "/m/.git/worktrees/w/commondir", "/m/.git/worktrees/w/gitdir",
		"/w/.mcp.json", "/m/.envrc")
}

func render(s Set) string {
	var b bytes.Buffer
	s.Render(&b)
	for _, w := range s.Warnings {
		b.WriteString("warning: " + w + "\n")
	}
	return b.String()
}

func TestBuildGolden(t *testing.T) {
	for name, c := range map[string]struct {
		tree Tree
		o    Options
	}{
		"plain":           {plainRepo(), Options{}},
		"linked-worktree": {linkedWorktree(), Options{}},
		"loosened":        {plainRepo(), Options{Add: []string{".env", "scripts/hooks"}, Drop: []string{".vscode", "git:hooks"}}},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Build(c.tree, c.o)
			if err != nil {
				t.Fatal(err)
			}
			got := render(s)
			file := filepath.Join("testdata", "set-"+name+".golden")
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test -update creates it)", err)
			}
			if got != string(want) {
				t.Errorf("set differs from %s (go test -update rewrites it):\n%s", file, got)
			}
		})
	}
}

func find(s Set, path string) (Path, bool) {
	for _, p := range s.Protected {
		if p.Path == path {
			return p, true
		}
	}
	return Path{}, false
}

func TestBuildRules(t *testing.T) {
	s, err := Build(plainRepo(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ro := s.ReadOnly()
	for _, p := range []string{"/w/.git/hooks", "/w/.git/config", "/w/.git/modules/sub/config", "/w/.git/worktrees/wt/commondir",
		"/w/.git/worktrees/wt/gitdir", "/w/vendor/lib/.git", "/w/sub/.git", "/w/wt/.git", "/w/.envrc", "/w/.vscode",
		"/w/.claude/settings.json", "/w/.claude/commands", "/w/vendor/lib/.envrc",
		// absent git paths get placeholders and are bound too
		"/w/.git/commondir", "/w/.git/modules/sub/config.worktree", "/w/.git/modules/sub/commondir", "/w/.githooks"} {
		if !slices.Contains(ro, p) {
			t.Errorf("%s is not bound read-only", p)
		}
	}
	// Inside a protected directory: covered, not bound again.
	if slices.Contains(ro, "/w/.vscode/tasks.json") || slices.Contains(ro, "/w/.git/hooks/pre-commit.sample") {
		t.Errorf("a path inside a protected directory is bound on its own: %q", ro)
	}
	// The gitdir back-link exists only in linked worktrees' git directories.
	if _, ok := find(s, "/w/.git/gitdir"); ok {
		t.Error("gitdir entry applied to a main git directory")
	}
	// config.worktree gets a placeholder only where the config may enable it.
	for path, want := range map[string]Placeholder{"/w/.git/commondir": SelfCommonDir, "/w/.git/modules/sub/config.worktree": EmptyFile,
		"/w/.git/config.worktree": NoPlaceholder, "/w/.mcp.json": NoPlaceholder} {
		p, ok := find(s, path)
		if !ok || !p.Absent || p.Placeholder != want {
			t.Errorf("%s: %+v (found %v), want absent with placeholder %q", path, p, ok, want)
		}
	}
	// Absent project files are not bound (no litter in the project): the audit checks them.
	if slices.Contains(ro, "/w/.mcp.json") {
		t.Error("an absent project file is bound")
	}
	// Every directory holding a bound path, up to the working directory, is pinned.
	// Every directory in or above a git directory, and above the working directory's own
	// project files, is pinned; nested work trees are not (see Build).
	if want := []string{"/w/.claude", "/w/.git", "/w/.git/modules", "/w/.git/modules/sub", "/w/.git/worktrees", "/w/.git/worktrees/wt"}; !slices.Equal(s.Pins, want) {
		t.Errorf("pins %q, want %q", s.Pins, want)
	}
	// A nested repository's .git is read-only whole: nothing inside it is bound again.
	for _, p := range ro {
		if strings.HasPrefix(p, "/w/vendor/lib/.git/") {
			t.Errorf("%s bound inside a whole read-only .git", p)
		}
	}
	if slices.Contains(s.Pins, "/w") || slices.Contains(s.Pins, "/w/.vscode") {
		t.Errorf("the root or a protected directory is pinned: %q", s.Pins)
	}
	if !slices.IsSorted(s.Pins) || !slices.IsSorted(s.ReadOnly()) {
		t.Error("binds are not in path order (parents before children)")
	}
	// Nothing outside the working directory without a bind.
	for _, p := range append(s.ReadOnly(), s.Pins...) {
		if !strings.HasPrefix(p, "/w/") {
			t.Errorf("%s is outside the working directory", p)
		}
	}

	w, err := Build(linkedWorktree(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Binds, []string{"/m/.git"}) {
		t.Errorf("binds %q", w.Binds)
	}
	for _, p := range []string{"/m/.git/hooks", "/m/.git/config", "/m/.git/worktrees/w/commondir", "/m/.git/worktrees/w/gitdir", "/w/.git", "/w/.mcp.json"} {
		if !slices.Contains(w.ReadOnly(), p) {
			t.Errorf("linked worktree: %s is not bound read-only", p)
		}
	}
	// The main worktree's own files are not in the sandbox: not protected there.
	if _, ok := find(w, "/m/.envrc"); ok {
		t.Error("a project file of the main worktree (outside) is in the set")
	}
}

func TestBuildLinks(t *testing.T) {
	tr := facts(Tree{Workdir: "/w", Tops: []string{"/w"}, GitDirs: []GitDirFact{{Path: "/w/.git"}}},
		"/w/.git/config", "/w/.git/hooks@", "/w/.envrc@", "/w/.claude@")
	s, err := Build(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/w/.git/hooks", "/w/.envrc", "/w/.claude/settings.json"} {
		if slices.Contains(s.ReadOnly(), p) {
			t.Errorf("%s (a link, or under one) is bound", p)
		}
		if !strings.Contains(strings.Join(s.Warnings, "\n"), p) {
			t.Errorf("no warning names %s: %q", p, s.Warnings)
		}
	}
	if !slices.Contains(s.ReadOnly(), "/w/.git/config") {
		t.Error("config not bound")
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{
		{Add: []string{"/etc/passwd"}}, {Add: []string{"../up"}}, {Add: []string{"a/../b"}}, {Add: []string{""}}, {Add: []string{"."}},
		{Drop: []string{".nope"}}, {Drop: []string{"hooks"}},
	} {
		_, err := Build(plainRepo(), o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Key == "" || oe.Why == "" {
			t.Errorf("%+v: %v, want an OptionError naming its key and why (cmd/box words the hint)", o, err)
		}
	}
	s, err := Build(plainRepo(), Options{Drop: []string{".vscode", "git:config"}, Add: []string{"Makefile"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := find(s, "/w/.vscode"); ok {
		t.Error("dropped .vscode still protected")
	}
	if _, ok := find(s, "/w/.git/config"); ok {
		t.Error("dropped git:config still protected")
	}
	if p, ok := find(s, "/w/Makefile"); !ok || !p.Absent {
		t.Errorf("added Makefile: %+v %v", p, ok)
	}
	if n := strings.Count(strings.Join(s.Warnings, "\n"), "protect_drop"); n != 2 {
		t.Errorf("%d drop warnings, want 2: %q", n, s.Warnings)
	}
}

func TestTruncatedWarns(t *testing.T) {
	tr := plainRepo()
	tr.Truncated, tr.Dirs = true, MaxDirs
	s, _ := Build(tr, Options{})
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "not protected during the run") {
		t.Errorf("no bound warning: %q", s.Warnings)
	}
}

// Every entry says what executes or obeys it, and names are unique.
func TestEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Entries() {
		if e.Why == "" || e.Name == "" || seen[e.Name] {
			t.Errorf("entry %+v: empty why/name or duplicate", e)
		}
		seen[e.Name] = true
		if (e.Scope == Project) != !(strings.HasPrefix(e.Name, "git:") || strings.HasPrefix(e.Name, "home:") || strings.HasPrefix(e.Name, "direnv:") || strings.HasPrefix(e.Name, "yarn:") || strings.HasPrefix(e.Name, "mise:")) {
			t.Errorf("entry %s: git entries are named git:*, home entries home:*, what an .envrc loads direnv:*, what a yarn rc names yarn:*, project entries by path", e.Name)
		}
		if e.Scope == Project && e.Absent != NoPlaceholder {
			t.Errorf("entry %s: a project placeholder would litter the operator's tree", e.Name)
		}
	}
	for _, must := range []string{".envrc", ".vscode", ".idea", ".mcp.json", ".claude/settings.json", ".claude/settings.local.json",
		".claude/commands", ".claude/agents", ".husky", ".gitmodules", ".pre-commit-config.yaml", ".npmrc", ".yarnrc.yml",
		".devcontainer", "git:hooks", "git:config", "git:config.worktree", "git:commondir", "git:pointer"} {
		if !seen[must] {
			t.Errorf("%s missing from the set", must)
		}
	}
}

// docs/bwrap.md names every entry (the doc is the set's user-facing list).
func TestEntriesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/bwrap.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Entries() {
		if !strings.Contains(string(doc), "`"+e.Name+"`") && !strings.Contains(string(doc), "`"+e.Name+"/`") {
			t.Errorf("docs/bwrap.md does not name %s", e.Name)
		}
	}
}

// Build of a scanned tree takes the scan's candidates only for the options the scan
// listed them for: other options (a drop, an addition) are honoured as for any tree.
func TestBuildScannedOtherOptions(t *testing.T) {
	wd := realTemp(t)
	os.WriteFile(filepath.Join(wd, ".envrc"), []byte("true\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "Makefile"), []byte("all:\n"), 0o644)
	tr := Scan(wd, t.TempDir(), Options{}, nil)
	has := func(s Set, p string) bool {
		return slices.ContainsFunc(s.Protected, func(q Path) bool { return q.Path == p && !q.Absent })
	}
	envrc, makefile := filepath.Join(wd, ".envrc"), filepath.Join(wd, "Makefile")
	same, err := Build(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !has(same, envrc) || has(same, makefile) {
		t.Fatalf("the scan's options: .envrc protected %v, Makefile %v", has(same, envrc), has(same, makefile))
	}
	other, err := Build(tr, Options{Drop: []string{".envrc"}, Add: []string{"Makefile"}})
	if err != nil {
		t.Fatal(err)
	}
	if has(other, envrc) {
		t.Error("dropped .envrc still protected")
	}
	if !slices.ContainsFunc(other.Protected, func(q Path) bool { return q.Path == makefile }) {
		t.Error("added Makefile not in the set")
	}
}
