package bwrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// box asked to launch inside one of its own sandboxes (an agent's wrapper calling box run
// in box run) refuses at once, by name, with what to do: before (session 19) it waited
// for ever for the outer run's hold on the tree.
func TestNestedRunRefused(t *testing.T) {
	w := newWorld(t)
	bin, err := os.ReadFile(w.box)
	if err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(w.proj, "boxbin")
	w.write(inner, string(bin))
	os.Chmod(inner, 0o755)
	c := w.cmd("run", "-y", "-q", "--", "./boxbin", "run", "-y", "-q", "--", "echo", "nest"+"ed")
	hung := time.AfterFunc(2*time.Minute, func() { c.Process.Kill() })
	r := w.collect(c)
	if !hung.Stop() {
		t.Fatalf("box run inside box run did not end: %q", r.stderr)
	}
	if r.code != 125 || strings.Contains(r.stdout, "nested") ||
		!strings.Contains(r.stderr, "box: error: this is already a box sandbox (BOX_SANDBOX=bwrap): box cannot launch another inside it\nbox: hint: the command runs sandboxed already: run it directly") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
