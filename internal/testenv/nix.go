package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NixDaemonSocket is where a multi-user Nix's daemon listens.
const NixDaemonSocket = "/nix/var/nix/daemon-socket/socket"

// NixDaemon makes sure a nix-daemon answers on NixDaemonSocket, as on a multi-user Nix
// host: it reuses one that runs, else starts one (as root, with a build group nixbld and
// a configuration of its own: no substituters, since no binary cache is reachable) and
// stops it, by pid, when the test ends. Test packages run side by side: one test at a time
// on the machine holds the daemon (nixLock), so none stops a daemon another still uses.
func NixDaemon(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	daemon := RequireTool(t, "nix-daemon")
	nixLock(t)
	if nixAnswers() {
		return
	}
	if _, err := exec.LookPath("getent"); err == nil {
		if exec.Command("getent", "group", "nixbld").Run() != nil {
			if out, err := exec.Command("groupadd", "--system", "nixbld").CombinedOutput(); err != nil {
				t.Fatalf("groupadd nixbld: %v: %s", err, out)
			}
		}
		if exec.Command("getent", "passwd", "nixbld1").Run() != nil {
			out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/var/empty",
				"--shell", "/usr/sbin/nologin", "--gid", "nixbld", "--groups", "nixbld", "nixbld1").CombinedOutput()
			if err != nil {
				t.Fatalf("useradd nixbld1: %v: %s", err, out)
			}
		}
	}
	conf := t.TempDir()
	os.WriteFile(filepath.Join(conf, "nix.conf"), []byte("build-users-group = nixbld\nexperimental-features = nix-command flakes\nsandbox = false\nsubstituters =\n"), 0o644)
	cmd := exec.Command(daemon)
	cmd.Env = append(os.Environ(), "NIX_CONF_DIR="+conf)
	log, _ := os.Create(filepath.Join(conf, "daemon.log"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nix-daemon: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Wait for the condition (the socket answers), bounded.
	deadline := time.Now().Add(30 * time.Second)
	for !nixAnswers() {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(conf, "daemon.log"))
			t.Fatalf("nix-daemon did not answer on %s: %s", NixDaemonSocket, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func nixAnswers() bool {
	c, err := net.DialTimeout("unix", NixDaemonSocket, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// nixLockPath is the machine-wide lock of the tests that use the nix daemon.
const nixLockPath = "/run/box-test-nix.lock"

// The lock is held once per process while any of its tests holds it (a test and its
// subtests may each ask).
var (
	nixMu   sync.Mutex
	nixHeld int
	nixFile *os.File
)

// nixLock waits for the machine-wide nix lock and holds it until the test ends (its
// cleanup runs after the daemon's, registered later).
func nixLock(t testing.TB) {
	t.Helper()
	nixMu.Lock()
	defer nixMu.Unlock()
	if nixHeld == 0 {
		f, err := os.OpenFile(nixLockPath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatalf("nix lock: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			t.Fatalf("nix lock %s: %v", nixLockPath, err)
		}
		nixFile = f
	}
	nixHeld++
	t.Cleanup(func() {
		nixMu.Lock()
		defer nixMu.Unlock()
		if nixHeld--; nixHeld == 0 {
			nixFile.Close()
		}
	})
}
