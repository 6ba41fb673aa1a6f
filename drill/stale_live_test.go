package drill_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/boxtest"
)

// fixtures lists the drill fixtures in dir.
func fixtures(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".box-drill-fixture-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitFixture waits until a drill fixture other than skip exists in dir, or the drill
// ended (then it fails).
func waitFixture(t *testing.T, dir, skip string, ended <-chan error) {
	for {
		for _, f := range fixtures(t, dir) {
			if f != skip {
				return
			}
		}
		select {
		case err := <-ended:
			t.Fatalf("the drill ended before its fixture appeared: %v", err)
		case <-time.After(20 * time.Millisecond): // polling a condition, not a timing
		}
	}
}

// TestDrillRemovesItsBait: box drill removes its fixture (repositories, .envrc, hooks,
// the home link, markers) when interrupted with Ctrl-C (exit 130) and when its output
// pipe closes; a later drill removes what a killed one left.
func TestDrillRemovesItsBait(t *testing.T) {
	w := boxtest.NewWorld(t)
	// A killed drill's leftovers: its owner is a process that has ended.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(w.Proj, ".box-drill-fixture-dead")
	w.Write(filepath.Join(stale, ".box-drill-owner"), strconv.Itoa(dead.Process.Pid)+"\n/nonexistent\n")
	w.Write(filepath.Join(stale, "repo", ".envrc"), "export BOX_DRILL=1\n")
	w.Write(filepath.Join(stale, "dotfiles", "rc"), "export BOX_DRILL=1\n")
	link := filepath.Join(w.Home, ".box-drill-fixture-dead-rc")
	if err := os.Symlink(filepath.Join(stale, "dotfiles", "rc"), link); err != nil {
		t.Fatal(err)
	}

	// Ctrl-C.
	c := w.Cmd("drill")
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- c.Wait() }()
	waitFixture(t, w.Proj, ".box-drill-fixture-dead", ended)
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the stale fixture is still there")
	}
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("the stale home link is still there")
	}
	c.Process.Signal(syscall.SIGINT)
	<-ended
	if code := c.ProcessState.ExitCode(); code != 130 {
		t.Errorf("drill after Ctrl-C: exit %d, want 130\n%s", code, errb.String())
	}
	if left := fixtures(t, w.Proj); len(left) > 0 {
		t.Errorf("after Ctrl-C the fixture is left: %v", left)
	}
	if links, _ := filepath.Glob(filepath.Join(w.Home, ".box-drill-fixture-*")); len(links) > 0 {
		t.Errorf("after Ctrl-C home links are left: %v", links)
	}

	// A closed pipe.
	c = w.Cmd("drill")
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = wr, wr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	r.Close() // nobody reads: box's next write fails
	ended = make(chan error, 1)
	go func() { ended <- c.Wait() }()
	<-ended
	if left := fixtures(t, w.Proj); len(left) > 0 {
		t.Errorf("after a closed pipe the fixture is left: %v", left)
	}
	if links, _ := filepath.Glob(filepath.Join(w.Home, ".box-drill-fixture-*")); len(links) > 0 {
		t.Errorf("after a closed pipe home links are left: %v", links)
	}
}
