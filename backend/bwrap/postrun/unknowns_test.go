package postrun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A linked worktree's gitdir or a commondir the run wrote that leads the host's git out of
// the writable roots is a finding, and moving it aside leaves the host's git nothing to
// follow; one git worktree add writes is none.
func TestAuditGitPointers(t *testing.T) {
	wd, outside := t.TempDir(), t.TempDir()
	gd := filepath.Join(wd, ".git")
	for _, d := range []string{"objects", "refs/heads", "worktrees/ok"} {
		os.MkdirAll(filepath.Join(gd, d), 0o755)
	}
	os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(gd, "config"), []byte("[core]\n\tbare = false\n"), 0o644)
	in := Input{Workdir: wd}
	before := Take(in)
	write := func(rel, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(gd, rel)), 0o755)
		os.WriteFile(filepath.Join(gd, rel), []byte(s), 0o644)
	}
	write("worktrees/ok/HEAD", "ref: refs/heads/ok\n")
	write("worktrees/ok/commondir", "../..\n")
	write("worktrees/ok/gitdir", filepath.Join(wd, "ok", ".git")+"\n")
	write("worktrees/evil/HEAD", "ref: refs/heads/main\n")
	write("worktrees/evil/commondir", "../..\n")
	write("worktrees/evil/gitdir", filepath.Join(outside, ".git")+"\n")
	write("worktrees/far/HEAD", "ref: refs/heads/main\n")
	write("worktrees/far/commondir", outside+"\n")
	write("commondir", outside+"\n")
	r := Audit(before, Take(in), t.TempDir(), time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		rel, _ := filepath.Rel(wd, f.Path)
		got = append(got, f.Kind+" "+rel)
	}
	want := "gitpointer .git/commondir, gitpointer .git/worktrees/evil/gitdir, gitpointer .git/worktrees/far/commondir"
	if strings.Join(got, ", ") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
	for _, p := range []string{"commondir", "worktrees/evil/gitdir", "worktrees/far/commondir"} {
		if _, err := os.Lstat(filepath.Join(gd, p)); err == nil {
			t.Errorf("%s still in place", p)
		}
	}
}

// worktrees/NAME as a link (hostile review, session 15): git follows it to a directory of
// the work tree whose gitdir names the home, and the host's git worktree repair writes
// ~/.git. The listing took only directories; the link is now a finding, moved aside, and
// nothing is left for git to follow. A link there before the run, unchanged, stays.
func TestAuditWorktreeLink(t *testing.T) {
	wd, home := t.TempDir(), t.TempDir()
	gd := filepath.Join(wd, ".git")
	for _, d := range []string{"objects", "refs/heads", "worktrees", "mine"} {
		os.MkdirAll(filepath.Join(gd, d), 0o755)
	}
	os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.Symlink("../mine", filepath.Join(gd, "worktrees", "mine"))
	in := Input{Workdir: wd}
	before := Take(in)
	os.MkdirAll(filepath.Join(wd, "stash"), 0o755)
	os.WriteFile(filepath.Join(wd, "stash", "gitdir"), []byte(filepath.Join(home, ".git")+"\n"), 0o644)
	os.Symlink("../../stash", filepath.Join(gd, "worktrees", "evil"))
	got := auditedFindings(t, before, in, wd)
	if want := "file .git/worktrees/evil added"; strings.Join(got, ", ") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
	if _, err := os.Lstat(filepath.Join(gd, "worktrees", "evil")); err == nil {
		t.Error("the link is still in place")
	}
	if _, err := os.Lstat(filepath.Join(gd, "worktrees", "mine")); err != nil {
		t.Errorf("the link from before the run was moved: %v", err)
	}
}

// The project files at the top of a repository the protected set's scan did not reach
// (in node_modules, which it does not enter, or past its bound) are watched too (hostile
// review, session 15: a sandbox wrote node_modules/dep/.envrc, .vscode/tasks.json and
// rust-toolchain.toml and the audit said nothing). A repository made during the run is
// moved aside and its work tree's files stay, as before.
func TestAuditProjectFilesAtEveryTop(t *testing.T) {
	wd := t.TempDir()
	mkgit := func(dir string) {
		for _, d := range []string{"objects", "refs/heads"} {
			os.MkdirAll(filepath.Join(dir, ".git", d), 0o755)
		}
		os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	}
	mkgit(wd)
	dep := filepath.Join(wd, "node_modules", "dep")
	mkgit(dep)
	os.MkdirAll(filepath.Join(dep, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(dep, ".vscode", "settings.json"), []byte("{}\n"), 0o644)
	in := Input{Workdir: wd, TopGuards: []Guard{{Path: ".envrc", Runs: "direnv"}, {Path: ".vscode", Runs: "VS Code"}}}
	before := Take(in)
	os.WriteFile(filepath.Join(dep, ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
	os.WriteFile(filepath.Join(dep, ".vscode", "tasks.json"), []byte("{}\n"), 0o644)
	fresh := filepath.Join(wd, "fresh")
	mkgit(fresh)
	os.WriteFile(filepath.Join(fresh, ".envrc"), []byte("a clone's\n"), 0o644)
	got := auditedFindings(t, before, in, wd)
	want := "repo fresh/.git added, file node_modules/dep/.envrc added, file node_modules/dep/.vscode/tasks.json added"
	if strings.Join(got, ", ") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
	for _, p := range []string{".envrc", ".vscode/tasks.json"} {
		if _, err := os.Lstat(filepath.Join(dep, p)); err == nil {
			t.Errorf("node_modules/dep/%s still in place", p)
		}
	}
	for _, p := range []string{filepath.Join(dep, ".vscode", "settings.json"), filepath.Join(fresh, ".envrc")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was moved: %v", p, err)
		}
	}
	// The repository's .git removed by the run: its work tree's files are still watched
	// (the snapshot after takes what the one before watched, Watched).
	before = Take(in)
	os.RemoveAll(filepath.Join(dep, ".git"))
	os.WriteFile(filepath.Join(dep, ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
	if got := auditedFindings(t, before, before.Watched(in), wd); strings.Join(got, ", ") != "file node_modules/dep/.envrc added" {
		t.Errorf("with dep/.git removed: findings %q, want node_modules/dep/.envrc added", got)
	}
}

// core.worktree moves a relative core.hooksPath (hostile review, session 15: in the
// Landlock mode, where the config is writable, the sandbox added core.worktree = ../sub
// to a repository whose hooks are in .husky and planted sub/.husky/pre-commit; the host's
// git commit ran it). The hooks directory in the work tree core.worktree names is watched
// too; the same for the global config's relative core.hooksPath.
func TestAuditHooksPathInCoreWorktree(t *testing.T) {
	for _, global := range []bool{false, true} {
		wd, home := t.TempDir(), t.TempDir()
		gd := filepath.Join(wd, ".git")
		for _, d := range []string{"objects", "refs/heads", "hooks"} {
			os.MkdirAll(filepath.Join(gd, d), 0o755)
		}
		os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		cfg := "[core]\n\tbare = false\n"
		if global {
			os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = .husky\n"), 0o644)
		} else {
			cfg += "\thooksPath = .husky\n"
		}
		os.WriteFile(filepath.Join(gd, "config"), []byte(cfg), 0o644)
		os.MkdirAll(filepath.Join(wd, ".husky"), 0o755)
		os.WriteFile(filepath.Join(wd, ".husky", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		in := Input{Workdir: wd, Home: home}
		before := Take(in)
		os.WriteFile(filepath.Join(gd, "config"), []byte(cfg+"\tworktree = ../sub\n"), 0o644)
		os.MkdirAll(filepath.Join(wd, "sub", ".husky"), 0o755)
		os.WriteFile(filepath.Join(wd, "sub", ".husky", "pre-commit"), []byte("#!/bin/sh\ntouch /tmp/pwn\n"), 0o755)
		got := auditedFindings(t, before, in, wd)
		if want := "file sub/.husky/pre-commit added"; strings.Join(got, ", ") != want {
			t.Errorf("global %v: findings %q, want %q", global, got, want)
		}
		if _, err := os.Lstat(filepath.Join(wd, "sub", ".husky", "pre-commit")); err == nil {
			t.Errorf("global %v: the planted hook is still in place", global)
		}
	}
}

// Across file systems the quarantine keeps holes, and past its bound renames the finding
// aside where it is instead of copying it.
func TestQuarantineAcrossFilesystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "box-audit-")
	if err != nil {
		t.Fatal("no /dev/shm (a tmpfs) to move across:", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	var sf, tf syscall.Statfs_t
	qdir := t.TempDir()
	syscall.Statfs(shm, &sf)
	syscall.Statfs(qdir, &tf)
	if sf.Type == tf.Type {
		t.Fatalf("/dev/shm and %s are one kind of file system: no cross-file-system move to test", qdir)
	}
	in := Input{Workdir: shm}
	before := Take(in)
	mk := func(name string) string {
		gd := filepath.Join(shm, name, ".git")
		os.MkdirAll(filepath.Join(gd, "objects"), 0o755)
		os.MkdirAll(filepath.Join(gd, "refs"), 0o755)
		os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		return gd
	}
	sparse := filepath.Join(mk("sparse"), "big")
	f, _ := os.Create(sparse)
	f.Truncate(1 << 30)
	f.WriteAt([]byte("x"), 1<<29)
	f.Close()
	fat := filepath.Join(mk("fat"), "blob")
	os.WriteFile(fat, make([]byte, 2<<20), 0o644)
	old := CopyLimit
	CopyLimit = 1 << 20
	t.Cleanup(func() { CopyLimit = old })
	r := Audit(before, Take(in), qdir, time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 2 || len(r.Beside) != 1 {
		t.Fatalf("findings %+v beside %q", r.Findings, r.Beside)
	}
	for _, f := range r.Findings {
		switch filepath.Base(filepath.Dir(f.Path)) {
		case "sparse":
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(f.Kept[0], "big"), &st); err != nil || st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
				t.Errorf("the sparse file's copy: size %d, %d bytes on disk (%v)", st.Size, st.Blocks*512, err)
			}
		case "fat":
			if !strings.HasPrefix(filepath.Base(f.Kept[0]), ".box-quarantined-") || filepath.Dir(f.Kept[0]) != filepath.Join(shm, "fat") {
				t.Errorf("past the bound: kept at %s", f.Kept[0])
			}
		}
	}
}

// A read-write mount outside the working directory (Input.Trees) is walked as the
// working directory is (hostile review, session 16: a hook and a core.fsmonitor planted
// in a mounted repository were not seen): a hook and a config key added in a repository
// there, a new repository, and the project files at the mount's top are findings.
func TestAuditReadWriteMountTrees(t *testing.T) {
	wd, lib, notes := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{"objects", "refs/heads", "hooks"} {
		os.MkdirAll(filepath.Join(lib, ".git", d), 0o755)
	}
	os.WriteFile(filepath.Join(lib, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(lib, ".git", "config"), []byte("[core]\n\tbare = false\n"), 0o644)
	in := Input{Workdir: wd, Writable: []string{wd, lib, notes}, Trees: []string{lib, notes},
		TopGuards: []Guard{{Path: ".envrc", Runs: "direnv"}}}
	before := Take(in)
	os.WriteFile(filepath.Join(lib, ".git", "hooks", "post-commit"), []byte("#!/bin/sh\ntouch /tmp/pwn\n"), 0o755)
	os.WriteFile(filepath.Join(lib, ".git", "config"), []byte("[core]\n\tbare = false\n\tfsmonitor = touch /tmp/pwn\n"), 0o644)
	os.WriteFile(filepath.Join(lib, ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
	os.WriteFile(filepath.Join(notes, ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
	for _, d := range []string{"objects", "refs"} {
		os.MkdirAll(filepath.Join(notes, "sub", ".git", d), 0o755)
	}
	os.WriteFile(filepath.Join(notes, "sub", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	r := Audit(before, Take(in), t.TempDir(), time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range r.Findings {
		got[f.Path] = true
	}
	for _, p := range []string{filepath.Join(lib, ".git", "hooks", "post-commit"), filepath.Join(lib, ".git", "config"),
		filepath.Join(lib, ".envrc"), filepath.Join(notes, ".envrc"), filepath.Join(notes, "sub", ".git")} {
		if !got[p] {
			t.Errorf("no finding for %s (findings: %v)", p, got)
		}
	}
	// The snapshot kept on disk for a later run's audit keeps its trees.
	b, err := before.JSON()
	var back Snapshot
	if err == nil {
		err = back.UnmarshalJSON(b)
	}
	if err != nil || !slices.Equal(back.Input().Trees, in.Trees) {
		t.Errorf("the snapshot read back does not walk its trees: %v %v", err, back.Trees)
	}
}

// auditedFindings audits the tree in takes after the run against before (the audit must
// not fail) and lists its findings as "KIND PATH CHANGE", the paths relative to wd.
func auditedFindings(t *testing.T, before *Snapshot, in Input, wd string) []string {
	t.Helper()
	r := Audit(before, Take(in), t.TempDir(), time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		rel, _ := filepath.Rel(wd, f.Path)
		got = append(got, f.Kind+" "+rel+" "+f.Change)
	}
	return got
}

// The project files a tool started in any directory obeys (Input.AnyGuards) are watched
// in every directory of the tree, not only at the tops (hostile review, session 18: a
// run planted pkg/.claude/settings.json and pkg/.mcp.json in a plain directory of its
// repository, and a later, wider run started in pkg/ obeyed them). A changed one is put
// back, a new one moved aside; in node_modules they are not watched (nothing is started
// there). With the watch off (a test build) the plants stay: the test can fail.
func TestAuditAnywhereGuards(t *testing.T) {
	for _, off := range []bool{false, true} {
		wd := t.TempDir()
		for _, d := range []string{".git/objects", ".git/refs/heads", "pkg/deep", "sub", "node_modules/x"} {
			os.MkdirAll(filepath.Join(wd, d), 0o755)
		}
		os.WriteFile(filepath.Join(wd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(wd, "sub", ".envrc"), []byte("use nix\n"), 0o644)
		guards := []Guard{{Path: ".envrc", Runs: "direnv"}, {Path: ".mcp.json", Runs: "Claude Code"}, {Path: ".claude/settings.json", Runs: "Claude Code"}}
		in := Input{Workdir: wd, TopGuards: guards, AnyGuards: guards}
		DisableAnyGuards = off
		before := Take(in)
		os.MkdirAll(filepath.Join(wd, "pkg", "deep", ".claude"), 0o755)
		os.WriteFile(filepath.Join(wd, "pkg", "deep", ".claude", "settings.json"), []byte(`{"hooks":{}}`), 0o644)
		os.WriteFile(filepath.Join(wd, "pkg", ".mcp.json"), []byte(`{"mcpServers":{}}`), 0o644)
		os.WriteFile(filepath.Join(wd, "sub", ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
		os.WriteFile(filepath.Join(wd, "node_modules", "x", ".mcp.json"), []byte("{}"), 0o644)
		got := strings.Join(auditedFindings(t, before, in, wd), ", ")
		DisableAnyGuards = false
		want := "file pkg/.mcp.json added, file pkg/deep/.claude/settings.json added, file sub/.envrc changed"
		if off {
			want = ""
		}
		if got != want {
			t.Errorf("watch off %v: findings %q, want %q", off, got, want)
		}
		if b, _ := os.ReadFile(filepath.Join(wd, "sub", ".envrc")); !off && string(b) != "use nix\n" {
			t.Errorf("sub/.envrc not put back: %q", b)
		}
	}
}

// A repository the run makes is moved aside and its work tree's files stay, as in a
// plain directory, where the project files a tool started there obeys are judged:
// hostile review (session 19): git init n, then n/.envrc and n/.claude/settings.json;
// the report named n/.git alone and both stayed (a top's guards were judged only when
// the repository was there before the run).
func TestAuditAnywhereGuardsNewRepo(t *testing.T) {
	wd := t.TempDir()
	for _, d := range []string{".git/objects", ".git/refs/heads", "old/.git/objects", "old/.git/refs/heads"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
	}
	os.WriteFile(filepath.Join(wd, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "old", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "old", ".envrc"), []byte("use nix\n"), 0o644)
	guards := []Guard{{Path: ".envrc", Runs: "direnv"}, {Path: ".claude/settings.json", Runs: "Claude Code"}, {Path: "flake.nix", Runs: "nix"}}
	in := Input{Workdir: wd, TopGuards: guards, AnyGuards: guards[:2]}
	before := Take(in)
	for _, d := range []string{"n/.git/objects", "n/.git/refs/heads", "n/.claude"} {
		os.MkdirAll(filepath.Join(wd, d), 0o755)
	}
	os.WriteFile(filepath.Join(wd, "n", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "n", ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "n", ".claude", "settings.json"), []byte(`{"hooks":{}}`), 0o644)
	os.WriteFile(filepath.Join(wd, "n", "flake.nix"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(wd, "old", ".envrc"), []byte("touch /tmp/pwn\n"), 0o644)
	got := strings.Join(auditedFindings(t, before, in, wd), ", ")
	// flake.nix is a top's only: with the new repository's .git moved aside, nothing
	// takes n for a project's top.
	want := "repo n/.git added, file n/.claude/settings.json added, file n/.envrc added, file old/.envrc changed"
	if got != want {
		t.Errorf("findings\n got %q\nwant %q", got, want)
	}
	if _, err := os.Lstat(filepath.Join(wd, "n", ".envrc")); err == nil {
		t.Errorf("n/.envrc stayed")
	}
}
