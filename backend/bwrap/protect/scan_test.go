package protect

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out)
	}
}

func realTemp(t *testing.T) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A real tree made by git: a repository with a submodule, a nested repository, a linked
// worktree inside, and a .git file planted to name a directory outside.
func TestScanRealTree(t *testing.T) {
	testenv.RequireTool(t, "git")
	base := realTemp(t)
	w, lib := filepath.Join(base, "w"), filepath.Join(base, "lib")
	for _, d := range []string{w, lib} {
		os.MkdirAll(d, 0o755)
		git(t, d, "init", "-q")
		os.WriteFile(filepath.Join(d, "f"), []byte("x\n"), 0o644)
		git(t, d, "add", "f")
		git(t, d, "commit", "-qm", "one")
	}
	git(t, w, "submodule", "add", "-q", lib, "sub")
	git(t, w, "commit", "-qm", "sub")
	git(t, w, "worktree", "add", "-q", "wt")
	os.MkdirAll(filepath.Join(w, "vendor", "nested"), 0o755)
	git(t, filepath.Join(w, "vendor", "nested"), "init", "-q")
	os.WriteFile(filepath.Join(w, ".envrc"), []byte("export A=1\n"), 0o644)
	git(t, w, "config", "core.hooksPath", ".githooks")
	git(t, w, "config", "include.path", "../shared.gitconfig")
	os.WriteFile(filepath.Join(w, "shared.gitconfig"), []byte("[include]\n\tpath = more.gitconfig\n"), 0o644)
	git(t, filepath.Join(w, "vendor", "nested"), "config", "core.hooksPath", "hooks here")
	// A planted pointer (an earlier run could write one) naming a real repository outside.
	os.MkdirAll(filepath.Join(w, "planted"), 0o755)
	os.WriteFile(filepath.Join(w, "planted", ".git"), []byte("gitdir: "+filepath.Join(lib, ".git")+"\n"), 0o644)

	tr := Scan(w, base, Options{}, nil)
	var gitdirs []string
	for _, g := range tr.GitDirs {
		gitdirs = append(gitdirs, g.Path)
	}
	if !slices.Equal(tr.Nested, []string{w + "/vendor/nested/.git"}) {
		t.Errorf("nested %q", tr.Nested)
	}
	for _, g := range []string{w + "/.git", w + "/.git/modules/sub", w + "/.git/worktrees/wt"} {
		if !slices.Contains(gitdirs, g) {
			t.Errorf("git directory %s not found: %q", g, gitdirs)
		}
	}
	if slices.Contains(gitdirs, lib+"/.git") || len(tr.Binds) != 0 {
		t.Errorf("a nested .git file's outside directory was followed: %q binds %q", gitdirs, tr.Binds)
	}
	for _, p := range []string{w + "/sub/.git", w + "/wt/.git", w + "/planted/.git"} {
		if !slices.Contains(tr.Pointers, p) {
			t.Errorf("pointer %s not found: %q", p, tr.Pointers)
		}
	}
	s, err := Build(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{w + "/.git/config", w + "/.git/hooks", w + "/.git/modules/sub/config", w + "/.git/worktrees/wt/commondir",
		w + "/vendor/nested/.git", w + "/sub/.git", w + "/wt/.git", w + "/planted/.git", w + "/.envrc", w + "/.gitmodules"} {
		if !slices.Contains(s.ReadOnly(), p) {
			t.Errorf("%s not bound read-only", p)
		}
	}
	if tr.Truncated {
		t.Error("truncated")
	}
	if !slices.Equal(tr.HooksPaths, []string{w + "/.githooks", w + "/wt/.githooks", w + "/vendor/nested/hooks here"}) {
		t.Errorf("hooks paths %q (a linked worktree runs its common config's relative hooksPath from its own top)", tr.HooksPaths)
	}
	// Included configs in the tree, followed: protected (one absent: an empty placeholder).
	if !slices.Equal(tr.Includes, []string{w + "/shared.gitconfig", w + "/more.gitconfig"}) {
		t.Errorf("includes %q", tr.Includes)
	}
	if p, ok := find(s, w+"/more.gitconfig"); !ok || !p.Absent || p.Placeholder != EmptyFile || !slices.Contains(s.ReadOnly(), w+"/shared.gitconfig") {
		t.Errorf("included configs: %+v %v", p, ok)
	}
	if p, ok := find(s, w+"/.githooks"); !ok || p.Placeholder != EmptyDir {
		t.Errorf("core.hooksPath directory: %+v %v", p, ok)
	}

	// The bound: a lower one truncates and says so.
	scanDirs = 3
	defer func() { scanDirs = MaxDirs }()
	tr = Scan(w, base, Options{}, nil)
	if s, _ := Build(tr, Options{}); !tr.Truncated || !strings.Contains(strings.Join(s.Warnings, " "), "more than 3 directories") {
		t.Errorf("truncated %v, warnings %q", tr.Truncated, s.Warnings)
	}
}

// The working directory is a linked worktree whose common directory lies outside: that
// common directory is bound read-write, with its protected parts read-only. A .git file
// naming any other directory is not bound.
func TestScanOutsideWorktree(t *testing.T) {
	testenv.RequireTool(t, "git")
	base := realTemp(t)
	main, wt := filepath.Join(base, "main"), filepath.Join(base, "wt")
	os.MkdirAll(main, 0o755)
	git(t, main, "init", "-q")
	git(t, main, "commit", "-q", "--allow-empty", "-m", "one")
	git(t, main, "worktree", "add", "-q", wt)
	tr := Scan(wt, base, Options{}, nil)
	if !slices.Equal(tr.Binds, []string{main + "/.git"}) {
		t.Fatalf("binds %q, notes %q", tr.Binds, tr.Notes)
	}
	s, _ := Build(tr, Options{})
	for _, p := range []string{main + "/.git/config", main + "/.git/hooks", main + "/.git/worktrees/wt/commondir", main + "/.git/worktrees/wt/gitdir", wt + "/.git"} {
		if !slices.Contains(s.ReadOnly(), p) {
			t.Errorf("%s not bound read-only: %q", p, s.ReadOnly())
		}
	}
	// Refused: box's own or secret directories.
	if tr := Scan(wt, base, Options{}, []string{base}); len(tr.Binds) != 0 || len(tr.Notes) == 0 {
		t.Errorf("refused directory bound: %q %q", tr.Binds, tr.Notes)
	}
	// A hostile .git file in a fresh working directory naming the main repository: the
	// back-link names the real worktree, not this one.
	evil := filepath.Join(base, "evil")
	os.MkdirAll(evil, 0o755)
	os.WriteFile(filepath.Join(evil, ".git"), []byte("gitdir: "+main+"/.git/worktrees/wt\n"), 0o644)
	if tr := Scan(evil, base, Options{}, nil); len(tr.Binds) != 0 || !strings.Contains(strings.Join(tr.Notes, " "), "back-link") {
		t.Errorf("planted pointer bound: %q %q", tr.Binds, tr.Notes)
	}
	os.WriteFile(filepath.Join(evil, ".git"), []byte("gitdir: "+main+"/.git\n"), 0o644)
	if tr := Scan(evil, base, Options{}, nil); len(tr.Binds) != 0 {
		t.Errorf("planted pointer to a main git directory bound: %q", tr.Binds)
	}
}

func TestPlace(t *testing.T) {
	d := realTemp(t)
	os.MkdirAll(filepath.Join(d, "w", ".git"), 0o755)
	w := filepath.Join(d, "w")
	tr := facts(Tree{Workdir: w, Tops: []string{w}, GitDirs: []GitDirFact{{Path: w + "/.git"}}}, w+"/.git/")
	s, _ := Build(tr, Options{})
	lock := filepath.Join(d, "data", "lock")
	rel1, _, err := Place(s, lock)
	if err != nil {
		t.Fatal(err)
	}
	rel2, _, err := Place(s, lock) // a second run on the same tree
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(w + "/.git/commondir"); string(b) != ".\n" {
		t.Errorf("commondir placeholder %q", b)
	}
	if fi, err := os.Stat(w + "/.git/hooks"); err != nil || !fi.IsDir() {
		t.Errorf("hooks placeholder: %v", err)
	}
	rel1()
	if _, err := os.Stat(w + "/.git/commondir"); err != nil {
		t.Error("commondir removed while another run holds the lock")
	}
	rel2()
	if _, err := os.Stat(w + "/.git/commondir"); err == nil {
		t.Error("commondir placeholder left after the last run")
	}
	if _, err := os.Stat(w + "/.git/config"); err != nil {
		t.Error("config placeholder (permanent) removed")
	}
	// A commondir changed by someone is not removed.
	rel3, _, _ := Place(s, lock)
	os.WriteFile(w+"/.git/commondir", []byte("../elsewhere\n"), 0o644)
	rel3()
	if _, err := os.Stat(w + "/.git/commondir"); err != nil {
		t.Error("a changed commondir was removed (the audit must see it)")
	}
}

// BenchmarkScan: the scan of a tree of 3000 directories (1000 of three levels) holding a
// repository, against reading the same directories with a plain walk.
func BenchmarkScan(b *testing.B) {
	base, _ := filepath.EvalSymlinks(b.TempDir())
	for i := 0; i < 1000; i++ {
		os.MkdirAll(filepath.Join(base, "deps", "d"+strconv.Itoa(i), "x", "y"), 0o755)
	}
	os.MkdirAll(filepath.Join(base, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(base, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	b.Run("scan", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Scan(base, "/nonexistent", Options{}, nil)
		}
	})
	b.Run("walkdir", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			filepath.WalkDir(base, func(string, fs.DirEntry, error) error { return nil })
		}
	})
}

// A git directory the user cannot write: no placeholder, and it is said so the bind goes.
func TestPlaceReadOnlyGitDir(t *testing.T) {
	testenv.RequireRoot(t) // root is needed to take the unprivileged user's view (setfsuid)
	uid, _ := testenv.User(t)
	d := realTemp(t)
	w := filepath.Join(d, "w")
	os.MkdirAll(w+"/.git", 0o755) // owned by root: the test user cannot write it
	tr := facts(Tree{Workdir: w, Tops: []string{w}, GitDirs: []GitDirFact{{Path: w + "/.git"}}}, w+"/.git/")
	s, _ := Build(tr, Options{})
	os.Chmod(d, 0o777)
	os.Chmod(filepath.Dir(d), 0o755)
	// The file system sees the test user (setfsuid is per thread: stay on this one).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.Setfsuid(uid); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setfsuid(0)
	rel, skipped, err := Place(s, filepath.Join(d, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	rel()
	if len(skipped) != len(s.Placeholders()) {
		t.Errorf("skipped %q of %d", skipped, len(s.Placeholders()))
	}
}

func TestHooksPathOf(t *testing.T) {
	d := realTemp(t)
	for cfg, want := range map[string]string{
		"[core]\n\thooksPath = .githooks\n":                 "/top/.githooks",
		"[CORE]\n\tHooksPath=\"a b\" ; c\n":                 "/top/a b",
		"[core] hookspath = /abs/h # x\n":                   "/abs/h",
		"[core]\n\thooksPath = ~/h\n[core]\n\tbare=false\n": "/home/u/h",
		"[user]\n\thooksPath = nope\n":                      "",
		"[core]\n\thooksPath = one\n\thooksPath = two\n":    "/top/two",
	} {
		f := filepath.Join(d, "config")
		os.WriteFile(f, []byte(cfg), 0o644)
		if got := hooksPathOf(f, "/top", "/home/u"); got != want {
			t.Errorf("%q: %q, want %q", cfg, got, want)
		}
	}
}

// The reading of core.hooksPath never panics, and names a clean absolute path or nothing.
func FuzzHooksPathOf(f *testing.F) {
	f.Add([]byte("[core]\n\thooksPath = .githooks\n"))
	f.Add([]byte("[core \"x\"]\nhookspath=\"\\\"\"\n"))
	d, _ := filepath.EvalSymlinks(f.TempDir())
	f.Fuzz(func(t *testing.T, cfg []byte) {
		p := filepath.Join(d, "config")
		os.WriteFile(p, cfg, 0o644)
		got := hooksPathOf(p, "/top", "/home/u")
		if got != "" && (!filepath.IsAbs(got) || filepath.Clean(got) != got) {
			t.Errorf("%q -> %q", cfg, got)
		}
	})
}

func TestRecheck(t *testing.T) {
	d := realTemp(t)
	w := filepath.Join(d, "w")
	os.MkdirAll(w+"/.git/hooks", 0o755)
	os.WriteFile(w+"/.git/config", nil, 0o644)
	os.WriteFile(w+"/.envrc", nil, 0o644)
	tr := Scan(w, d, Options{}, nil)
	s, _ := Build(tr, Options{})
	rel, skipped, err := Place(s, filepath.Join(d, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	if err := Recheck(s, skipped); err != nil {
		t.Fatal(err)
	}
	os.Remove(w + "/.envrc")
	os.Symlink("/etc/shadow", w+"/.envrc")
	var ce *ChangedError
	if err := Recheck(s, skipped); !errors.As(err, &ce) || ce.Path != w+"/.envrc" || ce.Now == "" {
		t.Errorf("a protected path turned into a link: %v", err)
	}
}
