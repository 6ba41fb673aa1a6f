package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syncWriter is a buffer two goroutines share.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// holdAt holds the tree dir as a run there would.
func holdAt(t *testing.T, dir string, stderr io.Writer) (func(), error) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), dir)
	tree, err := kernelPath(f)
	if err != nil {
		t.Fatal(err)
	}
	return holdTree(f, tree, "/nonexistent-home", stderr)
}

// While a run holds /proj: a run in /proj, in /proj/sub or around /proj waits, says for
// which run (this process: the test holds both) and where, and enters once the holder
// lets go; a run beside it (/projx: a shared prefix of letters is no parent) does not
// wait. Nothing is written anywhere.
func TestHoldTreeWaitsForOverlap(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(root, "proj")
	for _, d := range []string{"proj/sub", "projx"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var none bytes.Buffer
	releaseA, err := holdAt(t, proj, &none)
	if err != nil {
		t.Fatal(err)
	}
	releaseX, err := holdAt(t, filepath.Join(root, "projx"), &none)
	if err != nil {
		t.Fatal(err)
	}
	if none.Len() != 0 {
		t.Errorf("a run beside the held tree waited: %q", none.String())
	}
	releaseX()
	for _, c := range []struct{ name, dir, where string }{
		{"same tree", proj, "in this directory"},
		{"inside", filepath.Join(proj, "sub"), "in " + proj},
		{"around", root, "in " + proj},
	} {
		var said syncWriter
		entered := make(chan func(), 1)
		go func() {
			release, err := holdAt(t, c.dir, &said)
			if err != nil {
				t.Error(err)
				release = func() {}
			}
			entered <- release
		}()
		want := fmt.Sprintf("box: waiting for the run of pid %d (", os.Getpid())
		for deadline := time.Now().Add(time.Minute); !strings.Contains(said.String(), want); {
			select {
			case <-entered:
				t.Fatalf("%s: the run entered while /proj was held", c.name)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the run did not say it waits: %q", c.name, said.String())
			}
		}
		if c.name != "around" && !strings.Contains(said.String(), ") "+c.where+" to end") {
			t.Errorf("%s: the message does not say where the holder runs (%q): %q", c.name, c.where, said.String())
		}
		releaseA()
		select {
		case release := <-entered:
			releaseA = release // the next case waits for this one
		case <-time.After(time.Minute):
			t.Fatalf("%s: the run did not enter after the holder let go", c.name)
		}
	}
	releaseA()
	ents, _ := os.ReadDir(root)
	if len(ents) != 2 {
		t.Errorf("the guard left something in the trees: %v", ents)
	}
}

// A persistent box's directory is held by the name box new recorded: reached through a
// link now, it is refused by name, not followed.
func TestGuardTreeBoxDirectoryMoved(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "real")
	link := filepath.Join(root, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s := &Session{Stderr: io.Discard, Outside: Outside{Home: "/nonexistent-home"}}
	_, _, err = s.guardTree(Request{Persistent: &Persistent{Workdir: link}})
	var moved *TreeMovedError
	if !errors.As(err, &moved) || moved.Tree != link || moved.Now != real {
		t.Fatalf("%v, want a TreeMovedError from %s to %s", err, link, real)
	}
	tree, release, err := s.guardTree(Request{Persistent: &Persistent{Workdir: real}})
	if err != nil || tree != real {
		t.Fatalf("%q %v", tree, err)
	}
	release()
}

// /proc/locks names the holder of a flock by device and inode; a waiter's line ("->")
// is not a holder.
func TestLockHolder(t *testing.T) {
	st := unix.Stat_t{Dev: unix.Mkdev(0xfd, 1), Ino: 131}
	locks := "1: FLOCK  ADVISORY  WRITE 4242 fd:01:131 0 EOF\n" +
		"1: -> FLOCK  ADVISORY  WRITE 5151 fd:01:131 0 EOF\n" +
		"2: POSIX  ADVISORY  WRITE 77 fd:01:132 0 EOF\n"
	if pid := lockHolder(locks, st); pid != 4242 {
		t.Errorf("holder %d, want 4242", pid)
	}
	if pid := lockHolder(locks[strings.Index(locks, "\n")+1:], st); pid != 0 {
		t.Errorf("a waiter named as the holder: %d", pid)
	}
	if pid := lockHolder(locks, unix.Stat_t{Dev: unix.Mkdev(0xfd, 1), Ino: 132}); pid != 0 {
		t.Errorf("a POSIX lock named as the holder: %d", pid)
	}
}

// A tree in a bind mount of /srv/proj/sub (at /home/u/alias) has /srv/proj and /srv
// above it, by the names the root mount gives them; its own path's ancestors stop at
// what CheckWorkdir refuses (the home and above).
func TestAncestorsThroughBindMount(t *testing.T) {
	mounts := []mount{
		{"8:1", "/", "/"},
		{"0:30", "/", "/proc"},
		{"8:1", "/srv/proj/sub", "/home/u/alias"},
	}
	got := ancestorsIn("/home/u/alias/x", "/home/u", mounts)
	want := []string{"/srv", "/srv/proj", "/srv/proj/sub", "/home/u/alias"}
	if !slices.Equal(got, want) {
		t.Errorf("ancestors %q, want %q", got, want)
	}
	if got := ancestorsIn("/srv/proj/sub", "/home/u", mounts); !slices.Equal(got, []string{"/srv", "/srv/proj"}) {
		t.Errorf("ancestors of a plain path %q", got)
	}
	if got := unescapeMountinfo(`/a\040b\134c`); got != `/a b\c` {
		t.Errorf("unescape: %q", got)
	}
}
