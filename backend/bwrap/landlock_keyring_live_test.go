package bwrap_test

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

// The Landlock mode has no user namespace, so the keyrings the kernel keeps per user
// namespace, the user keyring (@u) and the persistent one (Kerberos's
// KEYRING:persistent:UID caches, the default on Fedora and RHEL), are the operator's
// own; and its command inherited box's session keyring (hostile review, session 11: a
// profile with syscalls = ["keyring"] printed a key of each). The mode refuses that
// opt-in by name, and the command joins a fresh session keyring as in the bwrap mode.
func TestLandlockKeyrings(t *testing.T) {
	testenv.RequireTool(t, "keyctl")
	w := landlockWorld(t)
	w.Write(w.Home+"/.config/box/profiles/kr.toml", "syscalls = [\"keyring\"]\n")
	// As the user: a session keyring of the test's own holding a key, and a key in the
	// user keyring (readable by the user, as a credential cache's may be), removed after.
	const script = `keyctl new_session >/dev/null && keyctl add user boxllsess SESSION-SECRET-4c1 @s >/dev/null || exit 90
u=$(keyctl add user boxlluser USER-SECRET-9e2 @s) && keyctl setperm "$u" 0x3f3f0000 && keyctl link "$u" @u && keyctl unlink "$u" @s >/dev/null || exit 91
"$@"; rc=$?
keyctl unlink "$u" @u >/dev/null
exit $rc`
	probe := `for r in @s @u; do k=$(keyctl search $r user boxllsess 2>/dev/null || keyctl search $r user boxlluser 2>/dev/null) && keyctl print "$k"; done
keyctl search @u user boxlluser >/dev/null 2>&1 && keyctl print "$(keyctl search @u user boxlluser)"
echo inside-done`
	run := func(profile string) boxtest.Result {
		c := exec.Command("/bin/sh", append([]string{"-c", script, "sh", w.Box, "run", "-p", profile, "-y", "-q", "--isolation", "landlock", "--", "sh", "-c"}, probe)...)
		c.Dir, c.Env = w.Proj, w.Env
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.UID), Gid: uint32(w.GID)}}
		r := w.Collect(c)
		t.Logf("profile %s: exit %d\n%s%s", profile, r.Code, r.Stdout, r.Stderr)
		if r.Code == 90 || r.Code == 91 {
			t.Fatalf("could not plant the keys as the user (exit %d): %s", r.Code, r.Stderr)
		}
		return r
	}
	leaked := func(r boxtest.Result) bool {
		return strings.Contains(r.Stdout, "SESSION-SECRET") || strings.Contains(r.Stdout, "USER-SECRET")
	}

	// The opt-in is refused by name: nothing runs.
	r := run("kr")
	if leaked(r) || strings.Contains(r.Stdout, "inside-done") || r.Code != bwrap.ExitStart || !strings.Contains(r.Stderr, "keyring") {
		t.Errorf("the Landlock mode with syscalls = [\"keyring\"]: want refused by name (exit %d), got exit %d", bwrap.ExitStart, r.Code)
	}
	// Without the opt-in, keyctl is refused (the filter).
	if r := run("ll"); leaked(r) || !strings.Contains(r.Stdout, "inside-done") {
		t.Errorf("the Landlock mode's default: exit %d, a key read or the command did not run", r.Code)
	}
	// The session keyring is fresh even where keyctl works (the filter off, a test
	// build): the user keyring is still the operator's, which is why the opt-in is refused.
	w.WithProtectionOff(t, bwrap.ProtSeccomp)
	if r := run("ll"); strings.Contains(r.Stdout, "SESSION-SECRET") || !strings.Contains(r.Stdout, "USER-SECRET") {
		t.Errorf("filter off: want the session key out of reach and the user key read (what the opt-in would expose), got exit %d", r.Code)
	}
	// With the refusal off, the opt-in reads the operator's user keyring.
	w.WithProtectionOff(t, bwrap.ProtLandlockKeyring)
	if r := run("kr"); !strings.Contains(r.Stdout, "USER-SECRET") {
		t.Errorf("with the refusal off the user key was not read (the test proves nothing): exit %d", r.Code)
	}
}

// The drill's kernel:keyring row asks for the session and user keyrings as a Kerberos
// tool would: PASS in the Landlock mode (keyctl refused, the opt-in refused by name);
// BREACH in a test build with the refusal off (BOX_UNSAFE_OFF=landlock-keyring) and a
// profile opting into keyctl: the user keyring is the operator's.
func TestLandlockDrillKeyringRow(t *testing.T) {
	w := landlockWorld(t)
	w.Write(w.Home+"/.config/box/profiles/kr.toml", "syscalls = [\"keyring\"]\npids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	row := func(profile string) drill.Result {
		r := w.Run("drill", "-p", profile, "--isolation", "landlock", "--group", "kernel", "--json")
		var rs []drill.Result
		if err := json.Unmarshal([]byte(r.Stdout), &rs); err != nil {
			t.Fatalf("box drill -p %s --json: %v (exit %d)\n%s", profile, err, r.Code, r.Stderr)
		}
		for _, x := range rs {
			if x.ID == "kernel:keyring" {
				return x
			}
		}
		t.Fatalf("no kernel:keyring row:\n%s", r.Stdout)
		return drill.Result{}
	}
	if got := row("ll"); got.Status != drill.Pass {
		t.Errorf("kernel:keyring: %s %s", got.Status, got.Observed)
	}
	if r := w.Run("drill", "-p", "kr", "--isolation", "landlock", "--group", "kernel"); r.Code == 0 || !strings.Contains(r.Stderr, `syscalls = ["keyring"]`) {
		t.Errorf("the drill of a keyring opt-in in the Landlock mode: want refused, exit %d\n%s", r.Code, r.Stderr)
	}
	w.WithProtectionOff(t, bwrap.ProtLandlockKeyring)
	if got := row("kr"); got.Status != drill.Breach {
		t.Errorf("refusal off: kernel:keyring: %s %s", got.Status, got.Observed)
	} else {
		t.Logf("refusal off: %s %s", got.Status, got.Observed)
	}
}
