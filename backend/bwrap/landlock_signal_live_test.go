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
	// A sleep of its own length per case, to find what is left of it. bash outlives a
	// SIGQUIT (as on a terminal's Ctrl-\), so that case's job is the sleep alone.
	for _, c := range []struct {
		sig    syscall.Signal
		code   int
		script string
	}{
		{syscall.SIGINT, 130, "echo started; sleep 3002; echo after"},
		{syscall.SIGTERM, 143, "echo started; sleep 3015; echo after"},
		{syscall.SIGQUIT, 131, "echo started; exec sleep 3003"},
	} {
		t.Run(c.sig.String(), func(t *testing.T) {
			marker := "sleep " + strconv.Itoa(3000+int(c.sig))
			t.Cleanup(func() { // what a failed case leaves (box killed: NOT HELD in this mode)
				for _, p := range userProcs(w.UID, marker) {
					pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			cmd := caseCmd(w, "seccomp", "run", "-p", "ll", "-y", "--", bash, "-c", c.script)
			out, pr := &boxtest.SyncBuf{}, startCI(t, cmd)
			started := make(chan struct{})
			go func() {
				b := make([]byte, 4096)
				once := false
				for {
					n, err := pr.Read(b)
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
			select {
			case <-started:
			case <-time.After(within):
				cmd.Process.Kill()
				t.Fatalf("never started: %q", out.String())
			}
			cmd.Process.Signal(c.sig)
			exited := make(chan struct{})
			go func() { cmd.Wait(); close(exited) }()
			select {
			case <-exited:
			case <-time.After(within):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("box still running %s after %v: the job did not end\n%s", within, c.sig, out.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != c.code || strings.Contains(out.String(), "after") {
				t.Errorf("%v: exit %d, output:\n%s\nwant %d and no \"after\"", c.sig, code, out.String(), c.code)
			}
			if !strings.Contains(out.String(), "running in the Landlock mode") {
				t.Errorf("not the Landlock mode:\n%s", out.String())
			}
			if left := userProcs(w.UID, marker); len(left) > 0 {
				t.Errorf("left running after box exited: %v", left)
			}
		})
	}
}

// startCI starts c with stdin /dev/null and stdout and stderr one pipe, as CI does;
// the read end is returned.
func startCI(t *testing.T, c *exec.Cmd) *os.File {
	t.Helper()
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdin, c.Stdout, c.Stderr = nil, wr, wr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	t.Cleanup(func() { r.Close() })
	return r
}

// userProcs lists the processes of uid whose command line holds s.
func userProcs(uid int, s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat("/proc/"+e.Name(), &st) != nil || int(st.Uid) != uid {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if line := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})); strings.Contains(line, s) {
			out = append(out, e.Name()+": "+line)
		}
	}
	return out
}
