package bwrap_test

// Field review (session 13): box in a container that refuses user namespaces (the
// Docker-like filter), isolation auto, as CI runs it: stdin /dev/null, stdout a pipe, no
// terminal at all. A CI runner cancels a job by signalling box (SIGINT, then SIGTERM). The
// signal must end the whole job, box must exit with the job's status, and nothing of the
// job may be left. Before, the Landlock mode dropped SIGINT and SIGQUIT (it counted on a
// terminal to deliver Ctrl-C) and sent SIGTERM to the command's first process alone: a
// cancelled `bash -c 'sleep; echo after'` ran to its end and box exited 0.

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestLandlockSignalWithoutTerminal(t *testing.T) {
	testenv.RequireRoot(t)
	bash := testenv.RequireTool(t, "bash")
	if abi := bwrap.LandlockABI(); abi < 4 {
		testenv.Skip(t, "requires Landlock ABI 4, this kernel has "+strconv.Itoa(abi))
	}
	w := boxtest.NewWorld(t)
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "isolation = \"auto\"\npids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	// A sleep of its own length per case (the marker), to find what is left of it. bash
	// outlives a SIGQUIT (as on a terminal's Ctrl-\), also one that comes before its exec,
	// so that case's job is a python sleep that says it started itself.
	for _, c := range []struct {
		sig            syscall.Signal
		code           int
		script, marker string
	}{
		{syscall.SIGINT, 130, "echo started; sleep 3002; echo after", "sleep 3002"},
		{syscall.SIGTERM, 143, "echo started; sleep 3015; echo after", "sleep 3015"},
		{syscall.SIGQUIT, 131, `exec python3 -c 'import time; print("started", flush=True); time.sleep(3003)'`, "sleep(3003)"},
	} {
		t.Run(c.sig.String(), func(t *testing.T) {
			marker := c.marker
			t.Cleanup(func() { // what a failed case leaves (box killed: NOT HELD in this mode)
				for _, p := range userProcs(w.UID, marker) {
					pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			cmd := caseCmd(w, "seccomp", "run", "-p", "ll", "-y", "--", bash, "-c", c.script)
			code, out := signalWhenStarted(t, cmd, c.sig)
			if code != c.code || strings.Contains(out, "after") {
				t.Errorf("%v: exit %d, output:\n%s\nwant %d and no \"after\"", c.sig, code, out, c.code)
			}
			if !strings.Contains(out, "running in the Landlock mode") {
				t.Errorf("not the Landlock mode:\n%s", out)
			}
			if left := userProcs(w.UID, marker); len(left) > 0 {
				t.Errorf("left running after box exited: %v", left)
			}
		})
	}
}

// signalWhenStarted starts c as CI does (stdin /dev/null, stdout and stderr one pipe),
// waits for "started" in its output, sends it sig and waits for it to end: its exit code
// and output. A c that never starts or does not end is killed and fails the test.
func signalWhenStarted(t *testing.T, c *exec.Cmd, sig syscall.Signal) (int, string) {
	t.Helper()
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c.Stdin, c.Stdout, c.Stderr = nil, wr, wr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	out := &boxtest.SyncBuf{}
	started, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		once := false
		for {
			n, err := r.Read(b)
			out.Write(b[:n])
			if !once && strings.Contains(out.String(), "started") {
				once = true
				close(started)
			}
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan struct{})
	select {
	case <-started:
	case <-time.After(within):
		c.Process.Kill()
		t.Fatalf("never started: %q", out.String())
	}
	c.Process.Signal(sig)
	go func() { c.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(within):
		c.Process.Kill()
		<-exited
		t.Fatalf("box still running %s after %v: the job did not end\n%s", within, sig, out.String())
	}
	<-done
	return c.ProcessState.ExitCode(), out.String()
}

// userPids are the pids of uid's processes.
func userPids(uid int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == uid {
			out = append(out, e.Name())
		}
	}
	return out
}

// userProcs lists the processes of uid whose command line holds s.
func userProcs(uid int, s string) []string {
	var out []string
	for _, pid := range userPids(uid) {
		b, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		if line := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})); strings.Contains(line, s) {
			out = append(out, pid+": "+line)
		}
	}
	return out
}
