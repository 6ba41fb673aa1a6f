package bwrap

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The sandbox writes ~/.claude, which is the instance directory on the host. Whatever it
// leaves there must not make box read or copy a host file on the next launch.
func TestPrepareInstanceHostileLinks(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "id_ed25519")
	if err := os.WriteFile(secret, []byte("PLANTED-KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(root, "inst")
	claude := filepath.Join(inst, ".claude")
	if err := os.MkdirAll(claude, 0o700); err != nil {
		t.Fatal(err)
	}
	// CLAUDE.md as a symlink to a secret; SANDBOX.md as a symlink to an endless device
	// and a fifo that would block a reader.
	os.Symlink(secret, filepath.Join(claude, "CLAUDE.md"))
	os.Symlink("/dev/zero", filepath.Join(claude, "SANDBOX.md"))
	done := make(chan error, 1)
	go func() {
		done <- PrepareInstance(inst, Policy{Network: NetNone, StateDir: ".claude", Instructions: "CLAUDE.md", Credentials: []string{".credentials.json"}})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PrepareInstance hung reading through a planted symlink")
	}
	md, err := os.ReadFile(filepath.Join(claude, "CLAUDE.md"))
	if err != nil || strings.Contains(string(md), "PLANTED") || strings.TrimSpace(string(md)) != importLine {
		t.Errorf("CLAUDE.md = %q, %v; want only the import line", md, err)
	}
	for _, f := range []string{"CLAUDE.md", "SANDBOX.md"} {
		fi, err := os.Lstat(filepath.Join(claude, f))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is not a regular file now: %v %v", f, fi, err)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "PLANTED-KEY\n" {
		t.Errorf("the host file changed: %q", b)
	}

	// A fifo is replaced, not opened for a blocking read.
	os.Remove(filepath.Join(claude, "CLAUDE.md"))
	if err := syscall.Mkfifo(filepath.Join(claude, "CLAUDE.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- PrepareInstance(inst, Policy{Network: NetNone, StateDir: ".claude", Instructions: "CLAUDE.md", Credentials: []string{".credentials.json"}})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PrepareInstance hung on a fifo")
	}
	// An ordinary CLAUDE.md keeps its content and gains the import once.
	os.Remove(filepath.Join(claude, "CLAUDE.md"))
	os.WriteFile(filepath.Join(claude, "CLAUDE.md"), []byte("my notes"), 0o600)
	for i := 0; i < 2; i++ {
		if err := PrepareInstance(inst, Policy{Network: NetNone, StateDir: ".claude", Instructions: "CLAUDE.md", Credentials: []string{".credentials.json"}}); err != nil {
			t.Fatal(err)
		}
	}
	if md, _ := os.ReadFile(filepath.Join(claude, "CLAUDE.md")); string(md) != "my notes\n\n"+importLine+"\n" {
		t.Errorf("CLAUDE.md = %q", md)
	}
}
