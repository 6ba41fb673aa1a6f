package bwrap_test

import (
	"bufio"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// TestQuietRun: with -q -y, a run where nothing is flagged prints nothing of box's own on
// stderr: no environment table, no git identity line, no note of a recovered audit that
// found nothing. The same run without -q does print them (so the test sees what -q
// hides), and a run that plants something the host would execute still reports it.
func TestQuietRun(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	w.write(filepath.Join(w.home, ".gitconfig"), "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n")

	loud := w.run("run", "-y", "--", "true")
	if loud.code != 0 || !strings.Contains(loud.stderr, "box: ") {
		t.Fatalf("without -q: exit %d, stderr %q (expected box's notes)", loud.code, loud.stderr)
	}
	quiet := w.run("run", "-q", "-y", "--", "sh", "-c", "echo out; echo err >&2")
	if quiet.code != 0 || quiet.stdout != "out\n" || quiet.stderr != "err\n" {
		t.Errorf("with -q, a clean run: exit %d, stdout %q, stderr %q (want the command's only)", quiet.code, quiet.stdout, quiet.stderr)
	}

	// box killed mid-run leaves its audit unfinished; the next quiet run recovers it,
	// finds nothing, and says nothing.
	c := w.cmd("run", "-q", "-y", "--", "sh", "-c", "echo ready; exec sleep 1000")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("the sandbox did not start: %q", line)
	}
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	if r := w.run("run", "-y", "--", "true"); !strings.Contains(r.stderr, "left its audit unfinished") {
		t.Fatalf("no unfinished audit to recover (the test plants nothing): %q", r.stderr)
	}
	c = w.cmd("run", "-q", "-y", "--", "sh", "-c", "echo ready; exec sleep 1000")
	if out, err = c.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	bufio.NewReader(out).ReadString('\n')
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	if r := w.run("run", "-q", "-y", "--", "true"); r.code != 0 || r.stderr != "" {
		t.Errorf("with -q, a run that recovered a clean audit: exit %d, stderr %q", r.code, r.stderr)
	}

	// A finding is never quiet.
	r := w.run("run", "-q", "-y", "--", "sh", "-c", "git init -q . && echo planted")
	if r.stdout != "planted\n" || !strings.Contains(r.stderr, "box: audit: .git: new git repository") {
		t.Errorf("with -q, a planted repository: exit %d, stdout %q, stderr %q (want the finding)", r.code, r.stdout, r.stderr)
	}
}
