package bwrap

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
// releases it; a record no one holds (a run that was killed) is removed, not waited for.
func TestGuardLaunchWaitsForTheHolder(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "tree.lock")
	if err := os.MkdirAll(lock+".live", 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(lock+".live", "1-dead.json")
	if err := os.WriteFile(stale, []byte(`{"pid":1,"command":"killed"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var none bytes.Buffer
	releaseA, err := guardLaunch(lock, liveRun{PID: 111, Command: "agent \x1b[31m"}, &none)
	if err != nil {
		t.Fatal(err)
	}
	if none.Len() != 0 {
		t.Errorf("the first run waited: %q", none.String())
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed run's record is still there: %v", err)
	}
	var said syncWriter
	entered := make(chan func(), 1)
	go func() {
		release, err := guardLaunch(lock, liveRun{PID: 222, Command: "make test"}, &said)
		if err != nil {
			t.Error(err)
		}
		entered <- release
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(said.String(), "box: waiting for the run of pid 111"); {
		select {
		case <-entered:
			t.Fatal("the second run entered while the first held the tree")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second run did not say it waits: %q", said.String())
		}
	}
	if strings.Contains(said.String(), "\x1b") {
		t.Errorf("the holder's command reached the terminal unescaped: %q", said.String())
	}
	releaseA()
	select {
	case release := <-entered:
		release()
	case <-time.After(time.Minute):
		t.Fatal("the second run did not enter after the first released the tree")
	}
	if ents, _ := os.ReadDir(lock + ".live"); len(ents) != 0 {
		t.Errorf("records left: %v", ents)
	}
}
