package bwrap_test

// The post-run audit, for real: a hostile `box run -y` as the unprivileged test user
// plants what the host's git would execute (a nested repository with core.fsmonitor, a
// shell alias, a filter driver; hooks and config in the project's own repository where
// the sandbox can reach them); afterwards the user's own git, on the host, runs nothing,
// and every file is still there, in place or in the quarantine the audit listed.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/internal/testenv"
)

// hostGit runs git as the world's user on the host, as a shell prompt or the user would.
func (w *world) hostGit(dir string, args ...string) (string, error) {
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append([]string{"GIT_PAGER=", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@example.com",
		"GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@example.com"}, w.env...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	out, err := c.CombinedOutput()
	return string(out), err
}

// markerDir is where planted commands would leave their marks: in the real home, which
// the sandbox sees only as an empty tmpfs, so a mark there can only come from the host.
func (w *world) markerDir() string {
	d := filepath.Join(w.home, "markers")
	w.write(filepath.Join(d, ".keep"), "")
	return d
}

func (w *world) marks(d string) []string {
	ents, _ := os.ReadDir(d)
	var out []string
	for _, e := range ents {
		if e.Name() != ".keep" {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestSandboxPostRunAudit(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := w.hostGit(w.proj, "add", "README"); err != nil {
		t.Fatal(err, out)
	}
	if out, err := w.hostGit(w.proj, "commit", "-qm", "the user's"); err != nil {
		t.Fatal(err, out)
	}
	marks := w.markerDir()

	r := w.sh(plant(marks) + "echo planted")
	t.Logf("box run (exit %d):\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stdout, "planted") {
		t.Fatalf("the hostile command did not run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"box: audit: vendor/lib/.git: new git repository", "core.fsmonitor = id >" + marks + "/m3; false",
		"alias.st = !id", "filter.x.smudge", "restore (read it first): mv ", "box: hint: the originals and manifest.json are in "} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("the audit report lacks %q", s)
		}
	}
	if m := w.marks(marks); len(m) != 0 {
		t.Fatalf("something ran on the host already: %v", m)
	}

	// On the host, later: the user's git everywhere the sandbox touched.
	lib := filepath.Join(w.proj, "vendor/lib")
	for _, args := range [][]string{{"status"}, {"st"}, {"checkout", "--", "."}, {"log", "-1"}} {
		w.hostGit(lib, args...)
		w.hostGit(w.proj, args...)
	}
	w.hostGit(w.proj, "checkout", "-q", "-b", "x")
	if m := w.marks(marks); len(m) != 0 {
		t.Errorf("the host ran what the sandbox planted: markers %v", m)
	}

	// Nothing of the user's is lost: the files stay, the repository waits in the
	// quarantine the manifest lists, and its own hint restores it with its history.
	if b, err := os.ReadFile(filepath.Join(lib, "code.txt")); err != nil || string(b) != "the agent wrote this\n" {
		t.Errorf("vendor/lib/code.txt: %q %v", b, err)
	}
	i := strings.Index(r.stderr, "manifest.json are in ")
	if i < 0 {
		t.Fatal("no quarantine named")
	}
	qdir := strings.Fields(r.stderr[i+len("manifest.json are in "):])[0]
	b, err := os.ReadFile(filepath.Join(qdir, "manifest.json"))
	var man postrun.Report
	if err != nil || json.Unmarshal(b, &man) != nil {
		t.Fatalf("manifest: %v\n%s", err, b)
	}
	var restore string
	for _, f := range man.Findings {
		if f.Kind == postrun.FindRepo && f.Path == filepath.Join(lib, ".git") {
			restore = f.Restore
			if len(f.Kept) != 1 {
				t.Errorf("kept %q", f.Kept)
			} else if _, err := os.Stat(filepath.Join(f.Kept[0], "HEAD.box-quarantined")); err != nil {
				t.Errorf("the quarantined repository (whole, its HEAD renamed): %v", err)
			} else if _, err := os.Lstat(filepath.Join(f.Kept[0], "HEAD")); err == nil {
				t.Errorf("the quarantined repository still has its HEAD: git takes it for a repository")
			}
		}
	}
	if restore == "" {
		t.Fatalf("the manifest does not list vendor/lib/.git:\n%s", b)
	}
	c := exec.Command("sh", "-c", restore)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("restore %q: %v %s", restore, err, out)
	}
	if out, _ := w.hostGit(lib, "-c", "core.fsmonitor=false", "log", "--format=%s"); !strings.Contains(out, "made inside") {
		t.Errorf("the restored repository lost its history: %q", out)
	}
	// The check can fail: restored, the planted fsmonitor runs on the host's git status.
	w.hostGit(lib, "status")
	if m := w.marks(marks); len(m) != 1 || m[0] != "m3" {
		t.Errorf("after restoring, git status left markers %v, want [m3]: the marker check proves nothing", m)
	}
}

// The command's exit code passes through the audit: a failing command, and one killed by
// a signal, still have their findings moved aside, and box exits with their code.
func TestSandboxPostRunAuditExitCodes(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	marks := w.markerDir()
	for _, c := range []struct {
		name, tail string
		code       int
	}{
		{"exit 3", "exit 3", 3},
		{"SIGTERM", "kill -TERM $$", 128 + 15},
	} {
		t.Run(c.name, func(t *testing.T) {
			w.t = t
			os.RemoveAll(filepath.Join(w.proj, "vendor"))
			r := w.sh(plant(marks) + c.tail)
			if r.code != c.code {
				t.Errorf("exit %d, want the command's %d\n%s", r.code, c.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "vendor/lib/.git: new git repository") {
				t.Errorf("no audit after %s:\n%s", c.name, r.stderr)
			}
			if _, err := os.Lstat(filepath.Join(w.proj, "vendor/lib/.git")); err == nil {
				t.Error("vendor/lib/.git is still in place")
			}
		})
	}
}

// box itself killed with SIGKILL mid-run: nothing of box runs after it, so the next box
// run in the directory finds the snapshot the dead run left and audits against it first.
func TestSandboxPostRunAuditAfterSIGKILL(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	// A repository: the killed run leaves box's placeholder commondir in it, box's own,
	// never a finding (field review, session 18: it was moved aside as one).
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	marks := w.markerDir()
	ready := filepath.Join(w.proj, "ready")
	c := w.cmd("run", "-y", "--", "sh", "-c", plant(marks)+"touch ready; exec sleep 600")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	waitFile(t, ready, waited, &stderr)
	c.Process.Signal(syscall.SIGKILL)
	<-waited
	if _, err := os.Lstat(filepath.Join(w.proj, "vendor/lib/.git")); err != nil {
		t.Fatalf("the planted repository should still be there after SIGKILL: %v", err)
	}
	r := w.run("run", "-y", "--", "true")
	t.Logf("next run (exit %d):\n%s", r.code, r.stderr)
	if r.code != 0 || !strings.Contains(r.stderr, "left its audit unfinished") || !strings.Contains(r.stderr, "vendor/lib/.git: new git repository") {
		t.Errorf("the next run did not audit the killed one: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "commondir") {
		t.Errorf("the next run took box's own placeholder for a finding:\n%s", r.stderr)
	}
	w.hostGit(filepath.Join(w.proj, "vendor/lib"), "status")
	if m := w.marks(marks); len(m) != 0 {
		t.Errorf("the host ran what the killed run planted: %v", m)
	}
	// And a run after that one has nothing left to recover.
	if r := w.run("run", "-y", "--", "true"); strings.Contains(r.stderr, "box: audit") {
		t.Errorf("a third run still audits:\n%s", r.stderr)
	}
}

// An audit that cannot neutralise a finding is never silent: box says what is left and
// exits 125, whatever the command's code (here: the quarantine cannot be made).
func TestSandboxPostRunAuditFailureExits125(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	marks := w.markerDir()
	w.write(filepath.Join(w.home, ".local/share/box/quarantine"), "a file where the quarantine directory goes\n")
	r := w.sh(plant(marks) + "exit 0")
	if r.code != 125 {
		t.Errorf("exit %d, want 125\n%s", r.code, r.stderr)
	}
	for _, s := range []string{"box: error: post-run audit: could not neutralise", "vendor/lib/.git", "(the command exited 0)", "box: hint: inspect the paths above"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
	// The failed audit's snapshot stays, so the next run (once the quarantine can be
	// made) audits the same run again, and then succeeds.
	os.Remove(filepath.Join(w.home, ".local/share/box/quarantine"))
	r = w.run("run", "-y", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "left its audit unfinished") || !strings.Contains(r.stderr, "vendor/lib/.git: new git repository") {
		t.Errorf("the next run: exit %d\n%s", r.code, r.stderr)
	}
}
