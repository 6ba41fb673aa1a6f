package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// agentGit is what an agent does all day: a repository, commits, a branch, an amend and
// a rebase, each commit with the identity git finds.
const agentGit = `set -e
git init -q -b main . && echo a > a && git add a && git commit -qm one
git checkout -qb topic && echo b > b && git add b && git commit -qm two
git commit -q --amend -m two-amended
git checkout -q main && echo c > c && git add c && git commit -qm three
git checkout -q topic && git rebase -q main
git log --format='%an <%ae>|%cn <%ce>|%s' topic
`

// TestGitIdentity: the operator's user.name and user.email reach the sandbox's git (and
// the audit), git config --global writes the sandbox's own home, never the host's, and
// the repository's protected config fails as SANDBOX.md says.
func TestGitIdentity(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	hostCfg := "# the operator's\n[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n[credential]\n\thelper = store\n[user]\n\tsigningkey = PLANTED-SIGNING-KEY\n"
	w.write(filepath.Join(w.home, ".gitconfig"), hostCfg)

	r := w.sh(agentGit)
	if r.code != 0 {
		t.Fatalf("agent's git: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>|two-amended") {
		t.Errorf("commits:\n%s", r.stdout)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>|") {
			t.Errorf("commit not by the operator's identity: %q", l)
		}
	}
	if !strings.Contains(r.stderr, "box: git commits as Ada Lovelace <ada@example.com>") {
		t.Errorf("the audit does not show the identity:\n%s", r.stderr)
	}

	// Values only: nothing else of the host's config is inside.
	r = w.sh(`git config --show-origin --list; cat ~/.claude/box-gitconfig`)
	for _, leak := range []string{"PLANTED-SIGNING-KEY", "credential.helper", "helper = store"} {
		if strings.Contains(r.stdout, leak) {
			t.Errorf("%s entered the sandbox:\n%s", leak, r.stdout)
		}
	}

	// A repository made inside goes to the quarantine when the run ends (docs/bwrap.md);
	// the operator's own, made on the host, is protected while the sandbox runs: git
	// config there fails; git config --global works, and wins over the operator's
	// identity.
	host := exec.Command("git", "init", "-q", "-b", "main", ".")
	host.Dir, host.Env = w.proj, w.env
	host.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	if out, err := host.CombinedOutput(); err != nil {
		t.Fatalf("git init on the host: %v %s", err, out)
	}
	r = w.sh(`git config user.email x@local 2>&1; echo "rc=$?"
git config --global user.email agent@sandbox && echo d > d && git add d README && git commit -qm four && git log -1 --format='%an <%ae>'
grep -c 'Device or resource busy' ~/.claude/SANDBOX.md`)
	if !strings.Contains(r.stdout, "rc=") || strings.Contains(r.stdout, "rc=0") {
		t.Errorf("git config on the protected .git/config did not fail:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "Ada Lovelace <agent@sandbox>") {
		t.Errorf("git config --global inside did not take: %q %q", r.stdout, r.stderr)
	}
	if !strings.HasSuffix(strings.TrimSpace(r.stdout), "1") {
		t.Errorf("SANDBOX.md does not say what to do instead of git config:\n%s", r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(w.home, ".gitconfig")); err != nil || string(b) != hostCfg {
		t.Errorf("host's ~/.gitconfig changed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(w.proj, ".git", "config")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, ".git", "config")); strings.Contains(string(b), "x@local") {
		t.Errorf("the protected .git/config was written:\n%s", b)
	}

	// Off with the profile key: no identity, no audit line.
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "noid.toml"), "git_identity = false\n")
	r = w.sh(`echo e > e && git add e && git -c user.useConfigOnly=true commit -qm five 2>&1; echo "rc=$?"`, "--profile", "noid")
	if strings.Contains(r.stdout, "rc=0") || strings.Contains(r.stderr, "git commits as") {
		t.Errorf("git_identity = false still passed the identity:\n%s\n%s", r.stdout, r.stderr)
	}
}
