package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// A run that finds the tree held waits, says for which run, and goes on once that run
// releases it; a record no one holds (a run that was killed) is removed, not waited for;
// a run in a directory inside the held tree waits too, one beside it does not.
func TestGuardLaunchWaitsForTheHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "1-dead.json")
	if err := os.WriteFile(stale, []byte(`{"pid":1,"command":"killed","tree":"/proj"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var none bytes.Buffer
	releaseA, err := guardLaunch(dir, liveRun{PID: 111, Command: "agent \x1b[31m", Tree: "/proj"}, &none)
	if err != nil {
		t.Fatal(err)
	}
	if none.Len() != 0 {
		t.Errorf("the first run waited: %q", none.String())
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed run's record is still there: %v", err)
	}
	// A tree beside /proj (a shared prefix of letters is not a parent) goes at once.
	releaseC, err := guardLaunch(dir, liveRun{PID: 333, Command: "ls", Tree: "/projx"}, &none)
	if err != nil {
		t.Fatal(err)
	}
	if none.Len() != 0 {
		t.Errorf("a run beside the held tree waited: %q", none.String())
	}
	holder := 111
	for i, tree := range []string{"/proj", "/proj/sub"} {
		var said syncWriter
		entered := make(chan func(), 1)
		pid := 222 + i
		go func() {
			release, err := guardLaunch(dir, liveRun{PID: pid, Command: "make test", Tree: tree}, &said)
			if err != nil {
				t.Error(err)
			}
			entered <- release
		}()
		for deadline := time.Now().Add(time.Minute); !strings.Contains(said.String(), fmt.Sprintf("box: waiting for the run of pid %d ", holder)); {
			select {
			case <-entered:
				t.Fatalf("a run in %s entered while the first held /proj", tree)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("a run in %s did not say it waits: %q", tree, said.String())
			}
		}
		if strings.Contains(said.String(), "\x1b") {
			t.Errorf("the holder's command reached the terminal unescaped: %q", said.String())
		}
		if tree != "/proj" && !strings.Contains(said.String(), "in /proj to end") {
			t.Errorf("the nested run does not name the holder's tree: %q", said.String())
		}
		releaseA()
		select {
		case release := <-entered:
			if tree == "/proj" {
				releaseA, holder = release, pid // the next case waits for this one
				continue
			}
			release()
		case <-time.After(time.Minute):
			t.Fatalf("a run in %s did not enter after the first released the tree", tree)
		}
	}
	releaseC()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("records left: %v", ents)
	}
}

// A record that does not read (or names no tree) stops the launch with its path: box
// cannot tell which tree it holds, so it never guesses that it is another's.
func TestGuardLaunchRefusesAnUnreadableRecord(t *testing.T) {
	for name, body := range map[string]string{"garbage": "{", "no-tree": `{"pid":5,"command":"x"}`} {
		dir := filepath.Join(t.TempDir(), "live")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		rec := filepath.Join(dir, "5-held.json")
		if err := os.WriteFile(rec, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(rec) // held: a live run
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		_, err = guardLaunch(dir, liveRun{PID: 6, Command: "ls", Tree: "/elsewhere"}, io.Discard)
		var we *LaunchWaitError
		if !errors.As(err, &we) || we.Record != rec {
			t.Errorf("%s: %v, want a LaunchWaitError naming %s", name, err, rec)
		}
		f.Close()
	}
}
