package bwrap_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

// TestSSHAgentBox: a persistent bwrap box made with --ssh-host (its profile choosing
// the key, no host) is stamped with the host: box exec into it gets box's filtering
// agent, which signs for the forge (git ls-remote over SSH works) and not for prod.
// --ssh-host is refused by name where it cannot be honoured: a vm box, a clone, a
// profile choosing no key.
func TestSSHAgentBox(t *testing.T) {
	w, l, s := sshWorld(t)
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "keys.toml"),
		fmt.Sprintf("backend = \"bwrap\"\nnetwork = \"full\"\nssh = { keys = [%q] }\n", s.chosenFP))
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "nokeys.toml"), "backend = \"bwrap\"\nnetwork = \"full\"\n")
	run := func(args ...string) boxtest.DrillRun {
		t.Helper()
		return w.pub().InLab(l, nil, args...)
	}
	if r := run("new", "--backend", "bwrap", "--name", "pusher", "--profile", "keys", "--ssh-host", forgeHost); r.Code != 0 {
		t.Fatalf("box new --ssh-host: exit %d\n%s", r.Code, r.Stderr)
	}
	script := fmt.Sprintf(`ssh-add -L | grep -c ssh-ed25519
git ls-remote ssh://%[1]s@%[2]s%[3]s >/dev/null 2>&1; echo "lsremote=$?"
ssh -F /run/box/ssh/config -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes %[1]s@%[2]s echo prod-in 2>/dev/null; echo "prod=$?"
`, testenv.UserName, forgeHost, s.repo)
	r := run("exec", "-y", "pusher", "--", "sh", "-c", script)
	for _, want := range []string{"1\n", "lsremote=0", "prod=255"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("box exec into the box: missing %q\nstdout:\n%s\nstderr:\n%s", want, r.Stdout, r.Stderr)
		}
	}
	if strings.Contains(r.Stdout, "prod-in") {
		t.Error("the box logged in to prod")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"new", "--backend", "vm", "--name", "vmbox", "--ssh-host", forgeHost}, "--ssh-host"},
		{[]string{"new", "--backend", "bwrap", "--name", "twin", "--from", "pusher", "--ssh-host", forgeHost}, "--ssh-host"},
		{[]string{"new", "--backend", "bwrap", "--name", "nokeys", "--profile", "nokeys", "--ssh-host", forgeHost}, "ssh.keys"},
		{[]string{"new", "--backend", "bwrap", "--name", "badhost", "--profile", "keys", "--ssh-host", "me@" + forgeHost}, "not an SSH host"},
	} {
		r := run(c.args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%q: exit %d, want a refusal naming %q:\n%s", c.args, r.Code, c.want, r.Stderr)
		}
	}
}
