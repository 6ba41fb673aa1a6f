package bwrap_test

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Ctrl-C while box prints the audit's report (its stderr slow: a full pipe, a paused
// terminal) must not kill box with the report half said: the findings moved aside are
// named only there, and the command's exit code is the answer, not 130 (hostile
// review, session 22: the hold on the signals ended before the report was printed).
func TestAuditReportSurvivesCtrlC(t *testing.T) {
	w := newWorld(t)
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The sandbox fills the pipe and ends: box's report then blocks in its write.
	c := w.cmd("run", "-y", "-q", "--", "sh", "-c", `git init -q sub; (head -c 1000000 /dev/zero >&2 &); sleep 1; exit 7`)
	c.Stderr = wr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	pid := c.Process.Pid
	blocked := false
	for deadline := time.Now().Add(60 * time.Second); !blocked && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/wchan")
		for _, f := range tasks {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), "pipe_write") {
				blocked = true
			}
		}
	}
	if !blocked {
		c.Process.Kill()
		c.Wait()
		t.Fatal("box never blocked writing its report to the full pipe")
	}
	time.Sleep(100 * time.Millisecond) // the sandbox's writer is gone: box's is the one
	c.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	out, _ := io.ReadAll(r)
	c.Wait()
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 7 || !strings.Contains(string(out), "sub/.git: new git repository") {
		t.Errorf("Ctrl-C while the report is written: signaled %v (%v), exit %d, want 7 and the report; report seen %v",
			ws.Signaled(), ws.Signal(), ws.ExitStatus(), strings.Contains(string(out), "sub/.git: new git repository"))
	}
}
