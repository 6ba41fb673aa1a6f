package vm

import (
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend"
)

func TestIncusArgs(t *testing.T) {
	got := IncusArgs("work", []string{"file", "push", "x", "{}/root/", "{}"})
	if !slices.Equal(got, []string{"file", "push", "x", "work/root/", "work"}) {
		t.Errorf("IncusArgs: %v", got)
	}
	// Without {}, the instance is appended.
	if got := IncusArgs("work", []string{"config", "show"}); !slices.Equal(got, []string{"config", "show", "work"}) {
		t.Errorf("IncusArgs without {}: %v", got)
	}
	for args, want := range map[string]string{
		"config show work":                         "",
		"exec work -- cat /etc/network/interfaces": "",
		"config set work security.nesting=true":    "security.nesting=true",
		"config device add work gpu gpu":           "device",
		"profile assign work default":              "profile",
		"network attach lanbr work":                "network",
		"config device set work eth0 nic":          "device nic",
		"copy work x --profile=default":            "--profile=default",
		"launch img x --network lan":               "--network",
	} {
		if got := strings.Join(OffStackWords(strings.Fields(args)), " "); got != want {
			t.Errorf("OffStackWords(%q) = %q, want %q", args, got, want)
		}
	}
}

// The incus client box runs is pinned to box's socket and project, whatever the user's
// environment says.
func TestPinnedIncus(t *testing.T) {
	env := PinnedIncusEnv([]string{"PATH=/bin", "INCUS_PROJECT=decoy", "INCUS_REMOTE=elsewhere", "INCUS_CONF=/home/u/.config/incus",
		"INCUS_GLOBAL_CONF=/etc/incus", "INCUS_DIR=/other", "INCUS_SOCKET=/other.socket", "HOME=/home/u"}, "/tmp/conf", "/var/lib/incus/unix.socket", "")
	want := []string{"PATH=/bin", "HOME=/home/u", "INCUS_CONF=/tmp/conf", "INCUS_GLOBAL_CONF=/tmp/conf", "INCUS_REMOTE=box",
		"INCUS_PROJECT=default", "INCUS_SOCKET=/var/lib/incus/unix.socket"}
	if !slices.Equal(env, want) {
		t.Errorf("env %q\nwant %q", env, want)
	}
	conf := PinnedIncusConfig("/var/lib/incus/unix.socket", "work")
	for _, w := range []string{"default-remote: box\n", `addr: "unix:///var/lib/incus/unix.socket"`, `project: "work"`} {
		if !strings.Contains(conf, w) {
			t.Errorf("config lacks %q:\n%s", w, conf)
		}
	}
}

// Hatch.Run: the client's own exit is box's (a *backend.ExitError, 128+N for a signal),
// and a client that cannot be run is box's own failure. A shell stands in for incus.
func TestHatchRunExit(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	run := func(script string) error {
		h := &Hatch{Args: []string{"-c", script}, socket: filepath.Join(t.TempDir(), "unix.socket")}
		return h.Run(sh, nil, nil, io.Discard, io.Discard)
	}
	if err := run("exit 0"); err != nil {
		t.Errorf("exit 0: %v", err)
	}
	for script, want := range map[string]int{"exit 3": 3, "kill -TERM $$": 128 + 15} {
		var ee *backend.ExitError
		if err := run(script); !errors.As(err, &ee) || ee.Code != want {
			t.Errorf("%s: %v, want exit %d", script, err, want)
		}
	}
	h := &Hatch{socket: filepath.Join(t.TempDir(), "unix.socket")}
	var ee *backend.ExitError
	if err := h.Run(filepath.Join(t.TempDir(), "no-incus"), nil, nil, io.Discard, io.Discard); err == nil || errors.As(err, &ee) {
		t.Errorf("a client that cannot run: %v, want box's own error", err)
	}
}
