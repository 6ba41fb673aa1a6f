package bwrap_test

// Field test (session 19): when bwrap failed while setting the sandbox up, after it had
// reported the sandbox's pid (a mount it could not make: "Can't create file at
// /etc/resolv.conf" on a systemd-resolved host), box's own error was the step it ran
// into next, "write |1: broken pipe" (or, in tier internet, a /proc/PID/uid_map not
// found), with the hint to run box --check, whose checks all pass.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxSetupEndedSaid(t *testing.T) {
	testenv.RequireRoot(t)
	w := newWorld(t)
	// A bwrap first on PATH that asks the real one, for box's launches (not its trial
	// sandbox), for a bind whose source is missing: the real bwrap reports the sandbox's
	// pid, then fails making its mounts.
	fake := filepath.Join(w.home, "fakebin", "bwrap")
	w.write(fake, "#!/bin/sh\ncase \" $* \" in *\" --info-fd \"*) set -- --ro-bind /nonexistent-box-setup-test /x \"$@\";; esac\nexec /usr/bin/bwrap \"$@\"\n")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	w.env = append(boxtest.EnvWithout(w.env, "PATH"), "PATH="+filepath.Dir(fake)+":"+path)
	// Tier allowlist: its attach runs while bwrap makes the mounts, so the sandbox is gone
	// by the time box releases it. (In tier none box can release it first: bwrap then
	// exits 1 and, its trial sandbox running, box takes that for the command's code;
	// bwrap's --json-status-fd would tell the two apart.)
	for _, tier := range []string{"allowlist"} {
		r := w.run("run", "-y", "-q", "--network", tier, "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "bwrap: Can't find source path") ||
			!strings.Contains(r.stderr, "box: error: the sandbox ended while bwrap set it up, before the command ran") ||
			!strings.Contains(r.stderr, "box: hint: bwrap's line above names the path it could not set up") {
			t.Errorf("tier %s: exit %d\n%s", tier, r.code, r.stderr)
		}
	}
}
