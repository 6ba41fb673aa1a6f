package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

// Credentials in the repository's git config (hostile review, session 11): what
// actions/checkout leaves (http.<url>.extraheader = AUTHORIZATION: basic ...), a remote
// URL with a token as userinfo, a url.<base>.insteadOf whose base carries one. The
// config is read-only inside but was readable: the namespaces mode now binds a redacted
// copy over it (git works, the URLs lose their userinfo), the Landlock mode refuses to
// launch, naming file and key; a config box cannot read is a refusal.
func TestGitConfigCredentials(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := boxtest.NewWorld(t)
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "pids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	asUser := func(script string) {
		t.Helper()
		c := exec.Command("/bin/sh", "-c", script)
		c.Dir, c.Env = w.Proj, w.Env
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.UID), Gid: uint32(w.GID)}}
		if r := w.Collect(c); r.Code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", script, r.Code, r.Stdout, r.Stderr)
		}
	}
	asUser(`git init -q && git -c user.name=t -c user.email=t@e commit -q --allow-empty -m first-commit-9a4 &&
git config http.https://github.com/.extraheader "AUTHORIZATION: basic MARKER-EXTRAHEADER-7f3" &&
git remote add origin https://oauth2:MARKER-URLTOKEN-5d1@gitlab.example/x.git &&
git config url.https://u:MARKER-INSTEADOF-2b9@host.example/.insteadOf https://host.example/ &&
git config core.abbrev 9`)
	cfg := filepath.Join(w.Proj, ".git", "config")
	before, _ := os.ReadFile(cfg)
	const probe = `cat .git/config; git log --format=%s; git remote -v; git config core.abbrev; echo inside-done`
	leaked := func(r boxtest.Result) bool { return strings.Contains(r.Stdout+r.Stderr, "MARKER-") }
	named := func(r boxtest.Result) bool {
		return strings.Contains(r.Stderr, cfg) && strings.Contains(r.Stderr, "http.https://github.com/.extraheader") && strings.Contains(r.Stderr, "remote.origin.url")
	}

	// The namespaces mode: a redacted copy, said aloud; git reads the rest.
	r := w.Run("run", "-y", "--", "sh", "-c", probe)
	t.Logf("bwrap: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if leaked(r) {
		t.Errorf("bwrap mode: the sandbox read a credential of .git/config")
	}
	if r.Code != 0 || !strings.Contains(r.Stdout, "inside-done") || !strings.Contains(r.Stdout, "first-commit-9a4") ||
		!strings.Contains(r.Stdout, "origin\thttps://gitlab.example/x.git (fetch)") || !strings.Contains(r.Stdout, "\n9\n") {
		t.Errorf("bwrap mode: git inside did not read the redacted config (git log, remote -v, core.abbrev)")
	}
	if !named(r) {
		t.Errorf("bwrap mode: the audit did not name the file and keys")
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Errorf("the host's .git/config changed:\n%s", after)
	}

	// The Landlock mode cannot bind over it: refused by name, nothing runs.
	if bwrap.LandlockABI() >= 4 {
		r = w.Run("run", "-p", "ll", "-y", "--isolation", "landlock", "--", "sh", "-c", probe)
		t.Logf("landlock: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		if leaked(r) || strings.Contains(r.Stdout, "inside-done") || r.Code == 0 || !named(r) || !strings.Contains(r.Stderr, "git config --file") {
			t.Errorf("landlock mode: want refused before launch naming file and keys with a hint, got exit %d", r.Code)
		}
	} else {
		testenv.Skip(t, "the Landlock part requires Landlock ABI 4")
	}

	// With the protection off (a test build) the marker is read: the test can fail.
	plain := w.Box
	w.WithProtectionOff(t, bwrap.ProtGitCreds)
	if r := w.Run("run", "-y", "-q", "--", "sh", "-c", probe); !leaked(r) {
		t.Errorf("protection off: the marker was not read (the test proves nothing): exit %d", r.Code)
	}
	w.Box, w.Env = plain, boxtest.EnvWithout(w.Env, "BOX_UNSAFE_OFF")

	// An included config box cannot read: a refusal, never a skip.
	asUser(`git config --unset-all http.https://github.com/.extraheader && git remote remove origin &&
git config --remove-section url.https://u:MARKER-INSTEADOF-2b9@host.example/ &&
git config include.path ../inc.cfg && echo '[core]' > inc.cfg && chmod 000 inc.cfg`)
	r = w.Run("run", "-y", "-q", "--", "sh", "-c", "echo inside-done")
	t.Logf("unreadable include: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if r.Code == 0 || strings.Contains(r.Stdout, "inside-done") || !strings.Contains(r.Stderr, "inc.cfg") {
		t.Errorf("a config box cannot read: want a refusal naming it, got exit %d", r.Code)
	}
}
