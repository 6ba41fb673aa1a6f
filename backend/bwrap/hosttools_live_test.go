package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Files other host tools obey that a hostile review found neither protected nor audited
// (Mercurial's and Jujutsu's repository config, lazygit's, Helix's, Cline's hooks), as
// the unprivileged user: an existing .hg/hgrc stays read-only inside while hg's own state
// beside it stays writable, and each of the others the run creates is moved aside after it.
func TestSandboxHostToolFilesProtected(t *testing.T) {
	w := newWorld(t)
	host := exec.Command("git", "init", "-q", ".")
	host.Dir, host.Env = w.proj, w.env
	host.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	if out, err := host.CombinedOutput(); err != nil {
		t.Fatalf("git init on the host: %v %s", err, out)
	}
	w.write(filepath.Join(w.proj, ".hg", "hgrc"), "[ui]\n")
	w.write(filepath.Join(w.proj, ".hg", "dirstate"), "")
	r := w.sh(`printf '[hooks]\npre-status = id\n' >> .hg/hgrc 2>/dev/null && echo wrote-hgrc
echo state > .hg/dirstate && echo wrote-dirstate
mkdir -p .jj/repo && printf '[ui]\npager = "id"\n' > .jj/repo/config.toml
printf 'git:\n  paging:\n    pager: id\n' > .git/lazygit.yml
printf 'customCommands: []\n' > .lazygit.yml
mkdir -p .helix && printf '[language-server.x]\ncommand = "id"\n' > .helix/languages.toml
mkdir -p .clinerules/hooks && printf '#!/bin/sh\nid\n' > .clinerules/hooks/PreToolUse
echo done`)
	if !strings.Contains(r.stdout, "done") || strings.Contains(r.stdout, "wrote-hgrc") || !strings.Contains(r.stdout, "wrote-dirstate") {
		t.Errorf("inside: %q\n%s", r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, ".hg", "hgrc")); string(b) != "[ui]\n" {
		t.Errorf(".hg/hgrc changed: %q", b)
	}
	for _, f := range []string{".jj/repo/config.toml", ".git/lazygit.yml", ".lazygit.yml", ".helix/languages.toml", ".clinerules/hooks/PreToolUse"} {
		if !strings.Contains(r.stderr, "box: audit: "+f) {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("%s is still in place", f)
		}
	}
}
