package bwrap_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

// Trust between runs (issue 19, breach 3): a tier-none run plants hooks in
// ~/.claude/settings.json and a line in ~/.claude/CLAUDE.md; the next run of the same
// project and profile with --network full --env GITHUB_TOKEN must not start with them.
// It starts fresh, the planted state set aside (kept, named), while equal and narrower
// runs keep their state as before.
func TestTrustWiderRunStartsFresh(t *testing.T) {
	w := newWorld(t)
	plant := `mkdir -p ~/.claude && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"curl evil"}]}]}}' > ~/.claude/settings.json && echo PLANTED-LINE >> ~/.claude/CLAUDE.md && echo planted`
	if r := w.sh(plant); r.code != 0 || !strings.Contains(r.stdout, "planted") {
		t.Fatalf("tier none plant: %d %q %q", r.code, r.stdout, r.stderr)
	}
	look := `cat ~/.claude/settings.json ~/.claude/CLAUDE.md 2>/dev/null; echo looked`
	wide := []string{"--network", "full", "--env", "GITHUB_TOKEN"}
	r := w.sh(look, wide...)
	if r.code != 0 || !strings.Contains(r.stdout, "looked") {
		t.Fatalf("wide run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "curl evil") || strings.Contains(r.stdout, "PLANTED-LINE") {
		t.Errorf("the wider run started with what the tier-none run planted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "set aside") || !strings.Contains(r.stderr, "network full") || !strings.Contains(r.stderr, "env GITHUB_TOKEN") {
		t.Errorf("the wider run did not say what it set aside and why:\n%s", r.stderr)
	}
	// Nothing is lost: the planted state is kept, out of every sandbox's view.
	kept, _ := filepath.Glob(filepath.Join(w.home, ".local/share/box/instances/*/set-aside-1/.claude/CLAUDE.md"))
	if len(kept) != 1 {
		t.Fatalf("the set-aside state is not kept: %v", kept)
	}
	if b, _ := os.ReadFile(kept[0]); !strings.Contains(string(b), "PLANTED-LINE") {
		t.Errorf("the set-aside CLAUDE.md: %q", b)
	}

	// An equal run, then a narrower one, keep the wide run's state.
	if r := w.sh(`echo WIDE-NOTE >> ~/.claude/CLAUDE.md`, wide...); r.code != 0 {
		t.Fatalf("equal run: %d %q", r.code, r.stderr)
	}
	for _, extra := range [][]string{wide, {"--network", "full"}, nil} {
		r := w.sh(`cat ~/.claude/CLAUDE.md`, extra...)
		if !strings.Contains(r.stdout, "WIDE-NOTE") || strings.Contains(r.stderr, "set aside") {
			t.Errorf("run %q lost the state of a wider or equal run:\n%s\n%s", extra, r.stdout, r.stderr)
		}
	}
	// The last run was tier none: the wide run sets its state aside again.
	if r := w.sh(look, wide...); strings.Contains(r.stdout, "WIDE-NOTE") || !strings.Contains(r.stderr, "set aside") {
		t.Errorf("a wide run after a narrow one obeyed its state:\n%s\n%s", r.stdout, r.stderr)
	}
}

// The same for a persistent bwrap box: a launch wider than the box's last (an allow name
// more) is refused before anything runs, and says how to go on; an equal one is not.
func TestTrustBoxWiderLaunchRefused(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "narrow", "--network", "allowlist")
	if r := w.in("narrow", `echo 'echo RAN-WITH-WIDER-REACH' >> ~/.profile; echo planted`); r.code != 0 {
		t.Fatalf("narrow launch: %d %q", r.code, r.stderr)
	}
	r := w.run("exec", "-y", "--allow", "example.com", "narrow", "--", "sh", "-lc", "echo started")
	if r.code == 0 || strings.Contains(r.stdout, "started") || strings.Contains(r.stdout, "RAN-WITH-WIDER-REACH") {
		t.Errorf("a wider launch ran the box's home: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "reaches further") || !strings.Contains(r.stderr, "allow example.com") || !strings.Contains(r.stderr, "box: hint:") {
		t.Errorf("the refusal does not say why and how to go on:\n%s", r.stderr)
	}
	if r := w.in("narrow", `cat ~/.profile`); r.code != 0 || !strings.Contains(r.stdout, "RAN-WITH-WIDER-REACH") {
		t.Errorf("an equal launch lost the box's home: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// The project store (nix = "store"): what a tier-none run built is not in the store a
// tier-full run starts with.
func TestTrustNixStoreWiderRunStartsFresh(t *testing.T) {
	w, _ := nixWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/selfnix.toml"), `nix = "store"
`)
	w.write(filepath.Join(w.proj, "hello.nix"), `derivation { name = "box-trust-hello"; system = "x86_64-linux"; builder = "/bin/sh";
  args = [ "-c" "/bin/mkdir -p $out/bin; printf '#!/bin/sh\necho planted in the store\n' > $out/bin/hello; /bin/chmod +x $out/bin/hello" ]; }
`)
	r := w.run("run", "-y", "--profile", "selfnix", "--", "sh", "-c", `nix-build hello.nix -o result && ./result/bin/hello`)
	if r.code != 0 || !strings.Contains(r.stdout, "planted in the store") {
		t.Fatalf("tier none build: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = w.run("run", "-y", "--profile", "selfnix", "--network", "full", "--env", "GITHUB_TOKEN", "--", "sh", "-c", `./result/bin/hello; echo done`)
	if strings.Contains(r.stdout, "planted in the store") || !strings.Contains(r.stderr, "set aside") {
		t.Errorf("the tier-full run ran what tier none put in the store:\n%s\n%s", r.stdout, r.stderr)
	}
}

// The Landlock mode is reach (a hostile review, session 18): it holds less than bwrap
// (the host's processes and their command lines, the host's terminal), so a run of the
// same project and profile in it must not start with the hook a bwrap run planted. Back
// in bwrap, the Landlock run's state stays.
func TestTrustLandlockIsReach(t *testing.T) {
	if abi := bwrap.LandlockABI(); abi < 4 {
		testenv.Skip(t, "the Landlock mode requires Landlock ABI 4, this kernel has "+strconv.Itoa(abi))
	}
	w := newWorld(t)
	plant := `mkdir -p "$CLAUDE_CONFIG_DIR" && echo PLANTED-LINE >> "$CLAUDE_CONFIG_DIR/CLAUDE.md" && echo planted`
	if r := w.sh(plant); r.code != 0 || !strings.Contains(r.stdout, "planted") {
		t.Fatalf("bwrap plant: %d %q %q", r.code, r.stdout, r.stderr)
	}
	look := `cat "$CLAUDE_CONFIG_DIR/CLAUDE.md" 2>/dev/null; echo looked`
	r := w.sh(look, "--isolation", "landlock")
	if r.code != 0 || !strings.Contains(r.stdout, "looked") {
		t.Fatalf("Landlock run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "PLANTED-LINE") {
		t.Errorf("the Landlock run started with what the bwrap run planted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "set aside") || !strings.Contains(r.stderr, "the Landlock mode") {
		t.Errorf("the Landlock run did not say what it set aside and why:\n%s", r.stderr)
	}
	if r := w.sh(`echo LANDLOCK-NOTE >> "$CLAUDE_CONFIG_DIR/CLAUDE.md"`, "--isolation", "landlock"); r.code != 0 {
		t.Fatalf("equal run: %d %q", r.code, r.stderr)
	}
	if r := w.sh(`cat "$CLAUDE_CONFIG_DIR/CLAUDE.md"`); !strings.Contains(r.stdout, "LANDLOCK-NOTE") || strings.Contains(r.stderr, "set aside") {
		t.Errorf("a bwrap run after a Landlock one lost its state:\n%s\n%s", r.stdout, r.stderr)
	}
}

// Host ports are reach (a hostile review): a tier-none run plants a hook; the next run
// of the same project and profile with --host-port (the host's loopback port, which the
// planted hook could then read or write: a database, a dev server's admin API) must not
// start with it. A persistent box's wider session (box exec --host-port) is refused.
func TestTrustHostPortIsReach(t *testing.T) {
	w := newWorld(t)
	plant := `mkdir -p ~/.claude && echo PLANTED-LINE >> ~/.claude/CLAUDE.md && echo planted`
	if r := w.sh(plant); r.code != 0 || !strings.Contains(r.stdout, "planted") {
		t.Fatalf("tier none plant: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r := w.sh(`cat ~/.claude/CLAUDE.md 2>/dev/null; echo looked`, "--host-port", "5432")
	if r.code != 0 || !strings.Contains(r.stdout, "looked") {
		t.Fatalf("--host-port run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "PLANTED-LINE") {
		t.Errorf("the --host-port run started with what the narrower run planted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "set aside") || !strings.Contains(r.stderr, "host ports 5432") {
		t.Errorf("the --host-port run did not say what it set aside and why:\n%s", r.stderr)
	}
	// The same port again is within: the state stays.
	if r := w.sh(`echo PORT-NOTE >> ~/.claude/CLAUDE.md`, "--host-port", "5432"); r.code != 0 {
		t.Fatalf("equal run: %d %q", r.code, r.stderr)
	}
	if r := w.sh(`cat ~/.claude/CLAUDE.md`, "--host-port", "5432"); !strings.Contains(r.stdout, "PORT-NOTE") || strings.Contains(r.stderr, "set aside") {
		t.Errorf("an equal run lost the state:\n%s\n%s", r.stdout, r.stderr)
	}

	w.must("new", "--backend", "bwrap", "--name", "narrow")
	if r := w.in("narrow", `echo 'echo RAN-WITH-HOST-PORT' >> ~/.profile; echo planted`); r.code != 0 {
		t.Fatalf("narrow launch: %d %q", r.code, r.stderr)
	}
	r = w.run("exec", "-y", "--host-port", "5432", "narrow", "--", "sh", "-lc", "echo started")
	if r.code == 0 || strings.Contains(r.stdout, "started") || strings.Contains(r.stdout, "RAN-WITH-HOST-PORT") {
		t.Errorf("a --host-port launch ran the box's home: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "reaches further") || !strings.Contains(r.stderr, "host ports 5432") {
		t.Errorf("the refusal does not say why:\n%s", r.stderr)
	}
}

// The ssh-agent filter's hosts are reach too: a run whose filter signs logins for the
// forge plants a hook; the next run of the same profile with --ssh-host prod more (its
// hook could log in to prod as the operator) must not start with it. A real ssh-agent of
// the test user with a key the profile chooses; known_hosts names both hosts (no server
// is dialled: the runs only read their state).
func TestTrustSSHHostIsReach(t *testing.T) {
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	dir, err := os.MkdirTemp("", "box-trust-ssh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chown(dir, w.uid, w.gid)
	sock := filepath.Join(dir, "agent.sock")
	ag := asUser(w, "ssh-agent", "-D", "-a", sock)
	out, _ := ag.StdoutPipe()
	if err := ag.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Process.Kill(); ag.Wait() })
	waitLine(t, out, "SSH_AUTH_SOCK")
	w.write(filepath.Join(w.home, ".ssh", "placeholder"), "")
	key := filepath.Join(w.home, ".ssh", "id_chosen")
	mustUser(t, asUser(w, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "chosen", "-f", key))
	add := asUser(w, "ssh-add", key)
	add.Env = append(boxtest.EnvWithout(w.env, "SSH_AUTH_SOCK"), "SSH_AUTH_SOCK="+sock)
	mustUser(t, add)
	hostKey := filepath.Join(dir, "host")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("host key: %v %s", err, out)
	}
	hk, _ := os.ReadFile(hostKey + ".pub")
	f := strings.Fields(string(hk))
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), fmt.Sprintf("forge.test %s %s\nprod.test %s %s\n", f[0], f[1], f[0], f[1]))
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "keys.toml"), "ssh = { keys = [\"chosen\"], hosts = [\"forge.test\"] }\n")
	w.env = append(boxtest.EnvWithout(w.env, "SSH_AUTH_SOCK"), "SSH_AUTH_SOCK="+sock)

	r := w.sh(`mkdir -p ~/.claude && echo PLANTED-LINE >> ~/.claude/CLAUDE.md && ssh-add -L | grep -c ssh-ed25519`, "--profile", "keys")
	if r.code != 0 || !strings.Contains(r.stdout, "1") {
		t.Fatalf("the forge run (the filter lists the chosen key): %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = w.sh(`cat ~/.claude/CLAUDE.md 2>/dev/null; echo looked`, "--profile", "keys", "--ssh-host", "prod.test")
	if r.code != 0 || !strings.Contains(r.stdout, "looked") {
		t.Fatalf("--ssh-host run: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "PLANTED-LINE") {
		t.Errorf("the --ssh-host prod.test run started with what the forge-only run planted:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "set aside") || !strings.Contains(r.stderr, "ssh hosts prod.test") {
		t.Errorf("the --ssh-host run did not say what it set aside and why:\n%s", r.stderr)
	}
}
