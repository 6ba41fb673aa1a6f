package bwrap_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
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

// The system git config (hostile review, session 12): /etc is bound read-only, so a
// credential in /etc/gitconfig (an extraheader a CI image sets for every repository, a
// token in an insteadOf base) was readable inside. It now gets the repository config's
// rule: a redacted copy bound over it in the bwrap mode, a refusal in the Landlock mode.
// The test gives box an /etc/gitconfig of its own in a private mount namespace (an
// overlay over /etc), never the machine's.
func TestSystemGitConfigCredentials(t *testing.T) {
	testenv.RequireRoot(t)
	w := boxtest.NewWorld(t)
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "pids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	etc := newEtcOverlay(t, "# the image's git setup\n[http]\n\textraheader = AUTHORIZATION: bearer MARKER-SYSEXTRA-3c1\n"+
		"[url \"https://x-access-token:MARKER-SYSURL-8e2@github.com/\"]\n\tinsteadOf = https://github.com/\n[core]\n\tautocrlf = input\n")
	const probe = `cat /etc/gitconfig; echo inside-done`
	leaked := func(r boxtest.Result) bool { return strings.Contains(r.Stdout+r.Stderr, "MARKER-") }
	named := func(r boxtest.Result) bool {
		return strings.Contains(r.Stderr, "/etc/gitconfig") && strings.Contains(r.Stderr, "http.extraheader") && strings.Contains(r.Stderr, "url.https://github.com/.insteadof")
	}

	r := etc.run(w, "run", "-y", "--", "sh", "-c", probe)
	t.Logf("bwrap: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if leaked(r) {
		t.Errorf("bwrap mode: the sandbox read a credential of /etc/gitconfig")
	}
	if r.Code != 0 || !strings.Contains(r.Stdout, "inside-done") || !strings.Contains(r.Stdout, "autocrlf") || !strings.Contains(r.Stdout, `[url "https://github.com/"]`) {
		t.Errorf("bwrap mode: the sandbox did not read the redacted copy")
	}
	if !named(r) {
		t.Errorf("bwrap mode: box did not name the file and keys")
	}
	if bwrap.LandlockABI() >= 4 {
		r = etc.run(w, "run", "-p", "ll", "-y", "--isolation", "landlock", "--", "sh", "-c", probe)
		t.Logf("landlock: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		if leaked(r) || strings.Contains(r.Stdout, "inside-done") || r.Code == 0 || !named(r) {
			t.Errorf("landlock mode: want refused before launch naming file and keys, got exit %d", r.Code)
		}
	} else {
		testenv.Skip(t, "the Landlock part requires Landlock ABI 4")
	}
	w.WithProtectionOff(t, bwrap.ProtSystemGitCreds)
	if r := etc.run(w, "run", "-y", "-q", "--", "sh", "-c", probe); !leaked(r) {
		t.Errorf("protection off: the marker was not read (the test proves nothing): exit %d\n%s", r.Code, r.Stderr)
	}
}

// etcOverlay is an /etc whose gitconfig is the given text, for box run in a private
// mount namespace: an overlay over the machine's /etc (which stays untouched).
type etcOverlay struct{ upper, work string }

func newEtcOverlay(t *testing.T, gitconfig string) etcOverlay {
	d := t.TempDir()
	o := etcOverlay{filepath.Join(d, "upper"), filepath.Join(d, "work")}
	os.MkdirAll(o.upper, 0o755)
	os.MkdirAll(o.work, 0o755)
	if err := os.WriteFile(filepath.Join(o.upper, "gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

// run runs box as w's user with the overlay mounted on /etc.
func (o etcOverlay) run(w *boxtest.World, args ...string) boxtest.Result {
	w.T.Helper()
	c := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`set -e; mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc; u=$3 g=$4; shift 4; exec setpriv --reuid="$u" --regid="$g" --clear-groups -- "$@"`,
		"sh", o.upper, o.work, strconv.Itoa(w.UID), strconv.Itoa(w.GID), w.Box}, args...)...)
	c.Dir, c.Env = w.Proj, w.Env
	return w.Collect(c)
}

// The drill's git-config row in the Landlock mode (hostile review, session 12): box
// drill --isolation auto, falling back where bwrap cannot start (the Docker-like
// filter), refused the whole drill at launch over the fixture's planted credential. The
// refusal is the protection holding: the drill now learns the mode before launch, takes
// the credential out, runs, and the row says PASS, refused; with the refusal off
// (BOX_UNSAFE_OFF=git-creds) the sandbox reads it: BREACH.
func TestLandlockDrillGitCredRow(t *testing.T) {
	w := landlockWorld(t)
	const id = "secret:git-config-credential"
	row := func(r boxtest.Result) drill.Result {
		t.Helper()
		var rs []drill.Result
		if err := json.Unmarshal([]byte(r.Stdout), &rs); err != nil {
			t.Fatalf("box drill --json: %v (exit %d)\n%s", err, r.Code, r.Stderr)
		}
		for _, x := range rs {
			if x.ID == id {
				return x
			}
		}
		t.Fatalf("no %s row:\n%s", id, r.Stdout)
		return drill.Result{}
	}
	r := inCase(w, "seccomp", "drill", "-p", "ll", "--isolation", "auto", "--group", "secrets", "--json")
	got := row(r)
	t.Logf("auto, fallen back: exit %d: %s %q", r.Code, got.Status, got.Observed)
	if got.Status != drill.Pass || !strings.Contains(got.Observed, "refused to launch") || !strings.Contains(r.Stderr, "running in the Landlock mode") {
		t.Errorf("auto, fallen back: %s %q\n%s", got.Status, got.Observed, r.Stderr)
	}
	if got := row(w.Run("drill", "-p", "ll", "--isolation", "landlock", "--group", "secrets", "--json")); got.Status != drill.Pass {
		t.Errorf("landlock: %s %q", got.Status, got.Observed)
	}
	w.WithProtectionOff(t, bwrap.ProtGitCreds)
	if got := row(w.Run("drill", "-p", "ll", "--isolation", "landlock", "--group", "secrets", "--json")); got.Status != drill.Breach {
		t.Errorf("refusal off: %s %q", got.Status, got.Observed)
	}
}

// Other credential files under /etc (policy.SystemSecrets): readable inside, which box
// cannot hide without breaking the tools that read them, so it names file and key
// before launch, never the value; a harmless file is not named.
func TestSystemSecretFilesNamed(t *testing.T) {
	testenv.RequireRoot(t)
	w := boxtest.NewWorld(t)
	etc := newEtcOverlay(t, "[core]\n\tautocrlf = input\n")
	os.WriteFile(filepath.Join(etc.upper, "npmrc"), []byte("//registry.npmjs.org/:_authToken=npm_MARKERSYSNPM4f1aaaaaaaaaaaaaaaaaaaaaaaaa\n"), 0o644)
	os.WriteFile(filepath.Join(etc.upper, "pip.conf"), []byte("[global]\ntimeout = 60\n"), 0o644)
	r := etc.run(w, "run", "-y", "--", "true")
	t.Logf("exit %d\n%s", r.Code, r.Stderr)
	if r.Code != 0 || !strings.Contains(r.Stderr, "/etc/npmrc (npm's global config) looks like it holds a credential (//registry.npmjs.org/:_authToken)") {
		t.Errorf("box did not name /etc/npmrc and its key")
	}
	if strings.Contains(r.Stderr, "MARKERSYSNPM") || strings.Contains(r.Stderr, "/etc/pip.conf") || strings.Contains(r.Stderr, "/etc/gitconfig") {
		t.Errorf("box printed a value, or named a harmless file")
	}
}
