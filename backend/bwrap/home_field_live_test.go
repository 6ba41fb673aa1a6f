package bwrap_test

// Field review (session 13): HOME as containers and CI jobs set it. A container gives a
// user without a passwd entry (docker run --user 12345) HOME=/; a CI job may run with a
// HOME it cannot write. Before, box run with HOME=/ covered the whole system with the
// sandbox's empty home (bwrap: execvp sh: No such file or directory, exit 1, no word from
// box), and an unwritable HOME failed with "post-run audit: mkdir /.local: permission
// denied" and no hint. Now both refuse before anything runs, exit 125, with a hint naming
// what to set; and the Landlock mode, which mounts no home, runs with HOME=/ (the
// Docker-like container with isolation auto).

import (
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestHomeFieldCases(t *testing.T) {
	testenv.RequireRoot(t)
	w := boxtest.NewWorld(t)
	data := w.Home + "/.local/share"
	env := func(base []string, home, dataHome string) []string {
		e := append(boxtest.EnvWithout(boxtest.EnvWithout(base, "HOME"), "XDG_DATA_HOME"), "HOME="+home)
		if dataHome != "" {
			e = append(e, "XDG_DATA_HOME="+dataHome)
		}
		return e
	}
	for i, c := range []struct {
		name, home, dataHome string
		says                 []string
	}{
		{"root home", "/", data, []string{"box: error: HOME=/ cannot be hidden in the sandbox", "box: hint: set HOME to a directory of your own"}},
		// XDG_DATA_HOME alone does not get past HOME=/ (HomeError follows): the hint
		// names HOME only (field review, session 20: it offered XDG_DATA_HOME).
		{"root home, no data home", "/", "", []string{"box: error: box keeps its state", "under /.local/share/box and cannot create it", "box: hint: set HOME to a directory of your own"}},
		{"missing home", "/nonexistent-box-home", "", []string{"box: error: box keeps its state", "/nonexistent-box-home/.local/share/box", "box: hint: set HOME (or XDG_DATA_HOME)"}},
		{"usr home", "/usr", data, []string{"box: error: HOME=/usr cannot be hidden", "box: hint: "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := "ran" + strconv.Itoa(i)
			cmd := w.Cmd("run", "-y", "--", "sh", "-c", "echo RAN > "+ran)
			cmd.Env = env(w.Env, c.home, c.dataHome)
			r := w.Collect(cmd)
			t.Logf("HOME=%s XDG_DATA_HOME=%s: exit %d\n%s", c.home, c.dataHome, r.Code, r.Stderr)
			if r.Code != 125 {
				t.Errorf("exit %d, want 125", r.Code)
			}
			for _, s := range c.says {
				if !strings.Contains(r.Stderr, s) {
					t.Errorf("stderr lacks %q", s)
				}
			}
			if strings.Contains(r.Stderr, "bwrap: ") {
				t.Errorf("bwrap's raw failure instead of box's")
			}
			if _, err := os.Stat(w.Proj + "/" + ran); err == nil {
				t.Errorf("the command ran")
			}
		})
	}
	// A uid with no passwd entry (setpriv --reuid 12345) and HOME unset: refused, saying
	// so, with a hint.
	t.Run("no passwd entry", func(t *testing.T) {
		uid := 1900000000 + os.Getpid()%100000
		if _, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			t.Fatalf("uid %d has a passwd entry", uid)
		}
		dir, err := os.MkdirTemp("", "box-nopasswd-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o777)
		cmd := exec.Command(w.Box, "run", "-y", "--", "sh", "-c", "echo RAN > ran")
		cmd.Dir, cmd.Env = dir, boxtest.EnvWithout(boxtest.EnvWithout(w.Env, "HOME"), "XDG_DATA_HOME")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		r := w.Collect(cmd)
		t.Logf("uid %d, HOME unset: exit %d\n%s", uid, r.Code, r.Stderr)
		if r.Code != 125 || !strings.Contains(r.Stderr, "box: error: cannot tell your home directory: HOME is unset and your uid has no passwd entry") || !strings.Contains(r.Stderr, "box: hint: set HOME") {
			t.Errorf("exit %d, want 125, the cause and a hint", r.Code)
		}
		if _, err := os.Stat(dir + "/ran"); err == nil {
			t.Errorf("the command ran")
		}
	})
	// The container case itself: HOME=/ under a filter refusing user namespaces, isolation
	// auto. The Landlock mode mounts no home: it runs, its HOME the instance's own.
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "isolation = \"auto\"\npids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	cmd := caseCmd(w, "seccomp", "run", "-p", "ll", "-y", "--", "sh", "-c", `echo "HOME=$HOME" > ran-ll`)
	cmd.Env = append(env(cmd.Env, "/", data), "XDG_CONFIG_HOME="+w.Home+"/.config")
	r := w.Collect(cmd)
	if r.Code != 0 || !strings.Contains(r.Stderr, "running in the Landlock mode") {
		t.Fatalf("HOME=/ in the container, isolation auto: exit %d\n%s", r.Code, r.Stderr)
	}
	if b, err := os.ReadFile(w.Proj + "/ran-ll"); err != nil || !strings.Contains(string(b), "HOME="+data+"/box/instances/") {
		t.Errorf("the command did not run with the instance's home: %q %v", b, err)
	}
}
