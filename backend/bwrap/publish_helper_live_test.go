package bwrap_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill/lab"
)

// When box's port helper (box __forward, in the sandbox's network namespace) ends while
// the sandbox runs, the published ports close every connection from then on: nothing
// more reaches the sandbox, but the operator must be told, not left with a dev server
// that "stopped answering". Before, the helper's end went unseen: its exit was read only
// when the run ended, and its error dropped (a hostile review). Real box run with
// --publish as the unprivileged user in the lab; the test kills the helper (by its pid,
// a descendant of the box it started) mid-run.
func TestPublishHelperDeathIsSaid(t *testing.T) {
	requirePortTools(t)
	w := newWorld(t)
	l := portsLab(t)
	// A run whose helper lives to the end says nothing of it (with host ports too, where
	// the helper's first task, handing over their listeners, is done at once).
	args := []string{"--network", "none", "--publish", fmt.Sprintf("%d:%d", pubHostPort, pubSandboxPort)}
	r := startServer(t, l, w, nil, append(args, "--host-port", fmt.Sprint(namedHostPort))...)
	r.stop(t)
	if strings.Contains(r.err.String(), "port helper") {
		t.Errorf("a run whose helper lived says it did not:\n%s", r.err.String())
	}
	r = startServer(t, l, w, nil, args...)
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", pubHostPort)
	if got := get(l, lab.RoleHost, url); !strings.Contains(got, "served from the sandbox") {
		t.Fatalf("the published port does not answer before the helper is killed: %q\nstderr:\n%s", got, r.err.String())
	}
	pid := descendantWithArg(t, r.cmd.Process.Pid, bwrap.ForwardSubcommand)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitReaped(t, pid)
	r.stop(t)
	if !strings.Contains(r.err.String(), "box: warning: ports: box's port helper in the sandbox's network namespace ended while the sandbox ran (signal: killed): the published ports closed new connections from then on") {
		t.Errorf("the helper's death mid-run is not said:\n%s", r.err.String())
	}
}

// waitReaped waits until box has reaped pid (its /proc entry is gone): the helper died
// mid-run, and box knows it, before the test ends the run. Stopping the run at once
// raced box's reaper (ci15b: pasta killed, the run stopped, no warning yet).
func waitReaped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not reaped after a minute", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not a delay
	}
}

// The internet tier's helper (pasta here) ending while the sandbox runs leaves the
// sandbox without a network (nothing more: its filter stays in the namespace); the
// operator is told when the run ends. Before, its end went unseen: Close killed a
// process already gone and said nothing (a hostile review).
func TestInternetHelperDeathIsSaid(t *testing.T) {
	requirePortTools(t)
	w := newWorld(t)
	l := portsLab(t)
	env := []string{"BOX_INTERNET_HELPER=pasta"}
	r := startServer(t, l, w, env, "--network", "internet")
	r.stop(t)
	if strings.Contains(r.err.String(), "internet tier: pasta ended") {
		t.Errorf("a run whose pasta lived says it did not:\n%s", r.err.String())
	}
	r = startServer(t, l, w, env, "--network", "internet")
	pid := descendantWhere(r.cmd.Process.Pid, func(argv []string) bool { return filepath.Base(argv[0]) == "pasta" })
	if pid == 0 {
		t.Fatalf("no pasta below box run %d", r.cmd.Process.Pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitReaped(t, pid)
	r.stop(t)
	if !strings.Contains(r.err.String(), "box: warning: internet tier: pasta ended while the sandbox ran (signal: killed") {
		t.Errorf("pasta's death mid-run is not said:\n%s", r.err.String())
	}
}
