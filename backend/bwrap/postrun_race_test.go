package bwrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// swapper exchanges r/x and r/l (a link to a directory of the operator's outside the
// tree) as fast as it can until ./stop appears: a sandbox still running on the tree
// racing the audit of another run (the hostile review's breach: the audit's chmod
// followed the swapped-in link and opened the operator's directory to everyone).
const swapper = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
open("swapping", "w").close()
n = 0
while not os.path.exists("stop"):
    libc.renameat2(-100, b"r/x", -100, b"r/l", 2)  # RENAME_EXCHANGE
    n += 1
print(n)
`

func TestSandboxPostRunAuditRaceNeverFollowsLinks(t *testing.T) {
	testenv.RequireTool(t, "python3")
	// A second run beside a live sandbox: the launch guard (launchguard.go) makes it wait
	// for the swapper; the audit's own care, the layer behind, is shown with it off.
	w := concurrentWorld(t)
	victim := filepath.Join(w.home, "victim")
	for _, d := range []string{victim, filepath.Join(victim, "d"), filepath.Join(w.proj, "r", "x", "d")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, w.uid, w.gid)
	}
	os.Chown(filepath.Join(w.proj, "r"), w.uid, w.gid)
	os.Chown(filepath.Join(w.proj, "r", "x"), w.uid, w.gid)
	// Unreadable to its owner: the audit grants itself the modes it needs there.
	if err := os.Chmod(filepath.Join(w.proj, "r", "x", "d"), 0o277); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(w.proj, "r", "l")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(w.proj, "r", "l"), w.uid, w.gid)
	w.write(filepath.Join(w.proj, "swap.py"), swapper)

	bg := w.cmd("run", "-y", "-q", "--", "python3", "swap.py")
	var bgErr strings.Builder
	bg.Stderr = &bgErr
	exited := make(chan struct{})
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			w.write(filepath.Join(w.proj, "stop"), "")
			<-exited
		}
	}
	go func() { bg.Wait(); close(exited) }()
	t.Cleanup(stop)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(w.proj, "swapping")); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the swapping sandbox ended: %v\n%s", bg.ProcessState, bgErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the swapping sandbox never started")
		}
		time.Sleep(20 * time.Millisecond) // polling for the condition, not synchronising by time
	}
	for i := 0; i < 15; i++ {
		w.run("run", "-y", "-q", "--", "true")
		if fi, err := os.Stat(filepath.Join(victim, "d")); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("run %d: the operator's directory outside the tree: %v %v, want drwx------", i, fi.Mode(), err)
		}
	}
	stop()
	if fi, err := os.Stat(filepath.Join(victim, "d")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("after the swapping run's own audit: %v %v, want drwx------", fi.Mode(), err)
	}
}
