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

// What the sandbox can put where box needs SANDBOX.md, CLAUDE.md or ~/.claude itself (a
// directory, a link, a fifo) heals on the next launch: moved aside, never deleted, never
// followed.
func TestPrepareInstanceHeals(t *testing.T) {
	for name, plant := range map[string]func(string) error{
		"dir": func(p string) error {
			os.Mkdir(p, 0o700)
			return os.WriteFile(filepath.Join(p, "keep"), []byte("mine"), 0o600)
		},
		"link": func(p string) error { return os.Symlink("/nonexistent/target", p) },
		"fifo": func(p string) error { return syscall.Mkfifo(p, 0o600) },
	} {
		for _, f := range []string{"SANDBOX.md", "CLAUDE.md", ".credentials.json"} {
			t.Run(name+"/"+f, func(t *testing.T) {
				inst := filepath.Join(t.TempDir(), "inst")
				claude := filepath.Join(inst, ".claude")
				if err := PrepareInstance(inst, Policy{Network: NetNone, StateDir: ".claude", Credentials: []string{".credentials.json"}, Instructions: "CLAUDE.md"}); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(claude, f))
				if err := plant(filepath.Join(claude, f)); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 2; i++ { // every later run works
					if err := PrepareInstance(inst, Policy{Network: NetNone, StateDir: ".claude", Credentials: []string{".credentials.json"}, Instructions: "CLAUDE.md"}); err != nil {
						t.Fatalf("run %d: %v", i, err)
					}
				}
				if f != ".credentials.json" {
					if fi, err := os.Lstat(filepath.Join(claude, f)); err != nil || !fi.Mode().IsRegular() {
						t.Errorf("%s not a regular file after healing: %v", f, err)
					}
				}
				if _, err := os.Lstat(filepath.Join(claude, f+".box-moved-1")); err != nil {
					t.Errorf("not moved aside: %v", err)
				}
				if name == "dir" {
					if b, _ := os.ReadFile(filepath.Join(claude, f+".box-moved-1", "keep")); string(b) != "mine" {
						t.Error("the moved-aside directory lost its content")
					}
				}
			})
		}
	}
	// ~/.claude itself replaced by a link.
	inst := filepath.Join(t.TempDir(), "inst")
	os.MkdirAll(inst, 0o700)
	os.Symlink(t.TempDir(), filepath.Join(inst, ".claude"))
	if err := PrepareInstance(inst, Policy{Network: NetNone, StateDir: ".claude", Credentials: []string{".credentials.json"}, Instructions: "CLAUDE.md"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(inst, ".claude")); err != nil || !fi.IsDir() {
		t.Errorf(".claude not a directory after healing: %v", err)
	}
}

func TestInstanceDirPerProfile(t *testing.T) {
	a := InstanceDir("/d", "/home/op/src/proj", "default")
	b := InstanceDir("/d", "/home/op/src/proj", "claude")
	if a == b || filepath.Dir(a) != "/d/box/instances" || !strings.HasPrefix(a, LegacyInstanceDir("/d", "/home/op/src/proj")+"@") {
		t.Errorf("%s %s", a, b)
	}
}
