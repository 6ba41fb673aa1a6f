package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// TestReadGitIdentity: the identity is read from the global files as git reads them,
// without running git: XDG then ~/.gitconfig (the last value wins), $GIT_CONFIG_GLOBAL
// alone when set, git's quoting and escapes, includes not followed, a FIFO not waited on,
// a file git refuses giving none.
func TestReadGitIdentity(t *testing.T) {
	home := t.TempDir()
	xdg := filepath.Join(home, "xdg")
	write := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home}
	if g := ReadGitIdentity(env); g.Set() {
		t.Errorf("no config files: %+v", g)
	}
	write(filepath.Join(home, ".config", "git", "config"), "[user]\n\tname = From XDG\n\temail = xdg@example.com\n")
	if g := ReadGitIdentity(env); g != (GitIdentity{"From XDG", "xdg@example.com"}) {
		t.Errorf("~/.config/git/config: %+v", g)
	}
	write(filepath.Join(home, ".gitconfig"), "[include]\n\tpath = other\n[User]\n\tName = \"Ada \\\"The\\\" Lovelace\" ; a comment\n[user \"sub\"]\n\temail = not@this\n[credential]\n\thelper = store\n")
	write(filepath.Join(home, "other"), "[user]\n\temail = included@example.com\n")
	if g := ReadGitIdentity(env); g != (GitIdentity{`Ada "The" Lovelace`, "xdg@example.com"}) {
		t.Errorf("~/.gitconfig after the XDG file, include not followed: %+v", g)
	}
	// $XDG_CONFIG_HOME moves the XDG file.
	write(filepath.Join(xdg, "git", "config"), "[user]\nemail = moved@example.com\n")
	if g := ReadGitIdentity(append(env, "XDG_CONFIG_HOME="+xdg)); g.Email != "moved@example.com" {
		t.Errorf("$XDG_CONFIG_HOME: %+v", g)
	}
	// $GIT_CONFIG_GLOBAL replaces both.
	if g := ReadGitIdentity(append(env, "GIT_CONFIG_GLOBAL="+filepath.Join(home, "other"))); g != (GitIdentity{"", "included@example.com"}) {
		t.Errorf("$GIT_CONFIG_GLOBAL: %+v", g)
	}
	if g := ReadGitIdentity(append(env, "GIT_CONFIG_GLOBAL=/dev/null")); g.Set() {
		t.Errorf("$GIT_CONFIG_GLOBAL=/dev/null: %+v", g)
	}
	// A FIFO is skipped, not waited on.
	fifo := filepath.Join(home, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if g := ReadGitIdentity(append(env, "GIT_CONFIG_GLOBAL="+fifo)); g.Set() {
		t.Errorf("FIFO: %+v", g)
	}
	// A bad line: git refuses the file, so there is no identity.
	write(filepath.Join(home, ".gitconfig"), "[user]\n\tname = x\n[broken\n")
	if g := ReadGitIdentity(env); g.Set() {
		t.Errorf("a file git refuses: %+v", g)
	}
}

// TestReadGitIdentityAsGit: the same values git itself reports, on files written the
// ways people write them.
func TestReadGitIdentityAsGit(t *testing.T) {
	testenv.RequireTool(t, "git")
	for _, cfg := range []string{
		"[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n",
		"[user]\nname=Grace   Hopper   # comment\nemail = \"g@x\"\n[user]\nname = Second Wins\n",
		"\xef\xbb\xbf[USER]\r\n  NAME = \"tab\\there\"\r\n  email = a\\\n-b@example.com\r\n",
		"[user] name = on the header line\n[core]\n\teditor = vi\n",
		"[user.sub]\nname = legacy subsection\n[user]\nemail = e@x\n",
		"; only a comment\n",
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "none"), "PATH=" + os.Getenv("PATH")}
		get := func(key string) string {
			c := exec.Command("git", "config", "--global", "--get", key)
			c.Dir, c.Env = "/", env
			out, _ := c.Output()
			return strings.TrimSuffix(string(out), "\n")
		}
		want := GitIdentity{get("user.name"), get("user.email")}
		if got := ReadGitIdentity(env); got != want {
			t.Errorf("%q: read %+v, git says %+v", cfg, got, want)
		}
	}
}
