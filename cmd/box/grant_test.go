package main

import (
	"os"
	"strings"
	"testing"

	"github.com/heavy-duty/box/host"
)

// The argv level of box grant and box revoke: every bad input is refused by name with
// exit 2, before any daemon is asked.
func TestGrantRevokeUsage(t *testing.T) {
	isolate(t)
	t.Setenv("INCUS_SOCKET", "/nonexistent/unix.socket")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"grant"}, "one user"},
		{[]string{"grant", "a", "b"}, "one user"},
		{[]string{"revoke"}, "one user"},
		{[]string{"grant", "no-such-user-box-test"}, "no such user: no-such-user-box-test"},
		{[]string{"revoke", "no-such-user-box-test", "--purge"}, "no such user"},
		{[]string{"grant", "root"}, "root is root"},
		{[]string{"revoke", "--bogus", "x"}, "unknown flag"},
	} {
		_, stderr, code := runMain(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "box: hint:") {
			t.Errorf("box %v: exit %d, stderr %q; want exit 2 naming %q with a hint", tc.args, code, stderr, tc.want)
		}
	}
	t.Setenv("BOX_REMOTE", "lab")
	if _, stderr, code := runMain(t, "grant", "root"); code != 2 || !strings.Contains(stderr, "BOX_REMOTE") {
		t.Errorf("grant with BOX_REMOTE: exit %d %q", code, stderr)
	}
}

// A granted user's box finds incus-user's socket when incusd's own is not writable, and
// scopes its client to their project.
func TestUserSocketFallback(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(nil, nil, nil)
	env := map[string]string{"INCUS_DIR": dir}
	e.getenv = func(k string) string { return env[k] }
	if got := e.localSocket(); got != dir+"/unix.socket" {
		t.Errorf("nothing there: %s", got)
	}
	touch := func(name string, mode uint32) {
		if err := writeFileMode(dir+"/"+name, mode); err != nil {
			t.Fatal(err)
		}
	}
	touch("unix.socket.user", 0o666)
	if got := e.localSocket(); got != dir+"/unix.socket.user" {
		t.Errorf("only incus-user's: %s", got)
	}
	if c := host.LocalClient(e.localSocket()); !strings.HasPrefix(c.Project, "user-") {
		t.Errorf("project on incus-user's socket: %q", c.Project)
	}
	touch("unix.socket", 0o666) // writable: the operator's way, even beside incus-user's
	if got := e.localSocket(); got != dir+"/unix.socket" {
		t.Errorf("both: %s", got)
	}
	if c := host.LocalClient(e.localSocket()); c.Project != "" {
		t.Errorf("project on incusd's own socket: %q", c.Project)
	}
	env["INCUS_SOCKET"] = "/elsewhere/unix.socket.user"
	if got := e.localSocket(); got != "/elsewhere/unix.socket.user" || !host.IsUserSocket(got) {
		t.Errorf("INCUS_SOCKET: %s", got)
	}
}

func writeFileMode(path string, mode uint32) error {
	return os.WriteFile(path, nil, os.FileMode(mode))
}
