package bwrap

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestGitConfigText(t *testing.T) {
	got := GitConfigText(GitIdentity{Name: `Ada "the" L\ovelace`, Email: "ada@example.com"})
	for _, want := range []string{"[include]\n\tpath = /etc/gitconfig\n", "[user]\n", "\tname = \"Ada \\\"the\\\" L\\\\ovelace\"\n", "\temail = \"ada@example.com\"\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(GitConfigText(GitIdentity{Email: "e@x"}), "name =") {
		t.Error("an absent name is written")
	}
}

func TestGitIdentityDecision(t *testing.T) {
	id := GitIdentity{Name: "Ada", Email: "ada@example.com"}
	for _, c := range []struct {
		name string
		on   bool
		id   GitIdentity
		pass bool
		warn bool
	}{
		{"passed", true, id, true, false},
		{"profile off", false, id, false, false},
		{"host has none", true, GitIdentity{}, false, false},
		{"email only", true, GitIdentity{Email: "e@x"}, true, false},
		{"newline in name", true, GitIdentity{Name: "Ada\n[core]\n\tpager = evil", Email: "e@x"}, false, true},
		{"escape in email", true, GitIdentity{Name: "Ada", Email: "e@x\x1b]0;"}, false, true},
	} {
		p, set := &Plan{}, map[string]string{}
		p.gitIdentity(c.on, c.id, "/home/u", ".claude", set)
		if got := set["GIT_CONFIG_SYSTEM"] != ""; got != c.pass || p.Git.Set() != c.pass {
			t.Errorf("%s: passed %v (plan %v), want %v", c.name, got, p.Git, c.pass)
		}
		if c.pass && set["GIT_CONFIG_SYSTEM"] != "/home/u/.claude/"+GitConfigFile {
			t.Errorf("%s: GIT_CONFIG_SYSTEM %q", c.name, set["GIT_CONFIG_SYSTEM"])
		}
		if (len(p.Warnings) > 0) != c.warn {
			t.Errorf("%s: warnings %q", c.name, p.Warnings)
		}
	}
	if s := (GitIdentity{Name: "Ada", Email: "a@x"}).String(); s != "Ada <a@x>" {
		t.Errorf("String %q", s)
	}
}

func TestSandboxMDGit(t *testing.T) {
	with := SandboxMD(Policy{Profile: "p", StateDir: ".claude", GitIdentity: "Ada <a@x>"})
	without := SandboxMD(Policy{Profile: "p", StateDir: ".claude"})
	for name, md := range map[string]string{"with": with, "without": without} {
		for _, want := range []string{"`git config --global`", "Device or resource busy", "`git -c KEY=VALUE`", "add worktrees inside the working directory", "record no upstream", "`git push origin HEAD`"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s identity: SANDBOX.md lacks %q", name, want)
			}
		}
	}
	if !strings.Contains(with, "commits are made as `Ada <a@x>`") || !strings.Contains(without, "no commit identity is set") {
		t.Errorf("SANDBOX.md's git line:\n%s\n%s", with, without)
	}
}

// WriteGitConfig writes the identity, keeps the file when it already holds it, replaces
// what the sandbox changed or planted (a symlink is moved aside, never followed), and
// removes it when no identity passes.
func TestWriteGitConfig(t *testing.T) {
	inst := t.TempDir()
	os.MkdirAll(filepath.Join(inst, ".claude"), 0o700)
	p := &Plan{Git: GitIdentity{Name: "Ada", Email: "ada@example.com"}}
	p.Spec.InstanceDir, p.Spec.StateDir = inst, ".claude"
	path := filepath.Join(inst, ".claude", GitConfigFile)
	want := GitConfigText(p.Git)
	inode := func() uint64 {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	if err := p.WriteGitConfig(); err != nil {
		t.Fatal(err)
	}
	first := inode()
	if err := p.WriteGitConfig(); err != nil || inode() != first {
		t.Errorf("the same identity rewritten: %v", err)
	}
	os.WriteFile(path, []byte("[core]\n\thooksPath = /tmp/x\n"), 0o600)
	if err := p.WriteGitConfig(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("a changed file kept: %q", b)
	}
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte(want), 0o600)
	os.Remove(path)
	os.Symlink(target, path)
	if err := p.WriteGitConfig(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a planted symlink kept: %v", err)
	}
	p.Git = GitIdentity{}
	if err := p.WriteGitConfig(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("no identity, file kept: %v", err)
	}
}

// The protected set's sentence (field test, session 19): with nothing protected beyond
// git's own files it read "..., and:." with an empty list.
func TestSandboxMDProtectedList(t *testing.T) {
	only := SandboxMD(Policy{Profile: "p", StateDir: ".claude", Workdir: "/w", Protected: []string{"/w/.git/hooks", "/w/.git/config"}})
	if strings.Contains(only, "and:.") || !strings.Contains(only, "ask the operator).\n") {
		t.Errorf("git's files only:\n%s", only)
	}
	more := SandboxMD(Policy{Profile: "p", StateDir: ".claude", Workdir: "/w", Protected: []string{"/w/.git/hooks", "/w/.envrc", "/w/.vscode"}})
	if !strings.Contains(more, "ask the operator), and: `.envrc` `.vscode`.\n") {
		t.Errorf("with others:\n%s", more)
	}
}
