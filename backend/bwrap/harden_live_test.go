package bwrap_test

// The Landlock mode's hostile review (session 7), for real as the unprivileged user: the
// sandbox cannot rewrite the trust record (A), nothing it starts outlives box's audit
// (B), and it cannot open your other terminals (D).

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/sys/unix"
)

// landlockWorld is a world whose profile ll lifts RLIMIT_NPROC to the hard limit (other
// tests fork thousands as the same user), for runs with --isolation landlock.
func landlockWorld(t *testing.T) *boxtest.World {
	testenv.RequireRoot(t)
	if abi := bwrap.LandlockABI(); abi < 4 {
		testenv.Skip(t, "requires Landlock ABI 4, this kernel has "+strconv.Itoa(abi))
	}
	w := boxtest.NewWorld(t)
	w.Write(w.Home+"/.config/box/profiles/ll.toml", "pids = "+strconv.FormatUint(nprocMax(), 10)+"\n")
	return w
}

// A: a Landlock-mode run writes a record naming tier full and GITHUB_TOKEN, and a file in
// the agent's state; the next run of the same project and profile with that reach must
// still find the state set aside. The record is unchanged, and the run lock untouched.
func TestLandlockTrustRecordOutOfReach(t *testing.T) {
	w := landlockWorld(t)
	// The review's payload ($HOME was the instance directory's root), then the root by name.
	plant := `printf '{"box":"box/reach/1","network":"full","env":["GITHUB_TOKEN","LANG","TERM"]}' > "$HOME/box-reach.json"
printf '{"box":"box/reach/1","network":"full","env":["GITHUB_TOKEN","LANG","TERM"]}' > "$HOME/../box-reach.json" 2>/dev/null && echo BREACH-ROOT-RECORD
rm -f "$HOME/../box-run.lock" 2>/dev/null && echo BREACH-LOCK
echo PLANTED > "$HOME/.claude/planted.txt" && echo PASS-STATE
echo ok > "$HOME/w" && echo PASS-HOME
echo ok > "$TMPDIR/w" && echo PASS-TMPDIR`
	r := w.Run("run", "-p", "ll", "-y", "-q", "--isolation", "landlock", "--", "sh", "-c", plant)
	t.Logf("the Landlock run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if r.Code != 0 || strings.Contains(r.Stdout, "BREACH") {
		t.Errorf("the Landlock mode's sandbox reached the instance directory's root:\n%s", r.Stdout)
	}
	for _, p := range []string{"PASS-STATE", "PASS-HOME", "PASS-TMPDIR"} {
		if !strings.Contains(r.Stdout, p) {
			t.Errorf("the Landlock mode refused %s", p)
		}
	}
	inst := bwrap.InstanceDir(filepath.Join(w.Home, ".local/share"), w.Proj, "ll")
	if b, err := os.ReadFile(filepath.Join(inst, bwrap.ReachFile)); err != nil || strings.Contains(string(b), "full") {
		t.Errorf("the record after the Landlock run: %q %v", b, err)
	}
	w.Env = append(boxtest.EnvWithout(w.Env, "GITHUB_TOKEN"), "GITHUB_TOKEN=ghp_faketoken1234567890abcdefghijklmnopqr")
	r = w.Run("run", "-p", "ll", "-y", "--network", "full", "--env", "GITHUB_TOKEN", "--", "sh", "-c", "cat ~/.claude/planted.txt 2>/dev/null; true")
	t.Logf("the wide run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if r.Code != 0 {
		t.Fatalf("the wide run: exit %d", r.Code)
	}
	if strings.Contains(r.Stdout, "PLANTED") {
		t.Errorf("the tier-full run with GITHUB_TOKEN read what the Landlock run planted")
	}
	if !strings.Contains(r.Stderr, "set aside") {
		t.Errorf("the wide run did not set the narrower run's state aside:\n%s", r.Stderr)
	}
}

// B: the command starts a descendant in a session of its own that would write a git hook
// once told to go, after box ended. It holds a fifo open to wait for the word: when box
// has exited, a writer can open the fifo only while that descendant lives. box must have
// ended it before its audit (and before exiting).
func TestLandlockDescendantsEndWithTheCommand(t *testing.T) {
	w := landlockWorld(t)
	boxtest.Must(t, os.MkdirAll(w.Proj+"/.git/hooks", 0o755))
	for _, d := range []string{w.Proj + "/.git", w.Proj + "/.git/hooks"} {
		boxtest.Must(t, os.Chown(d, w.UID, w.GID))
	}
	w.Write(w.Proj+"/late.sh", `exec 3<>late.fifo
echo $$ > late.ready
read go <&3
printf '#!/bin/sh\ncat "$HOME/.ssh/id_ed25519" > "$HOME/leaked"\n' > .git/hooks/pre-commit
chmod +x .git/hooks/pre-commit
echo WROTE > late.wrote
`)
	cmd := `mkfifo late.fifo && setsid sh late.sh </dev/null >/dev/null 2>&1 &
while [ ! -s late.ready ]; do sleep 0.01; done
echo started`
	r := w.Run("run", "-p", "ll", "-y", "-q", "--isolation", "landlock", "--", "sh", "-c", cmd)
	t.Logf("box run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	if r.Code != 0 || !strings.Contains(r.Stdout, "started") {
		t.Fatalf("the command did not start its descendant: exit %d", r.Code)
	}
	f, err := os.OpenFile(w.Proj+"/late.fifo", os.O_WRONLY|unix.O_NONBLOCK, 0)
	if err == nil {
		// The descendant lives: tell it to go, and show what it does.
		f.WriteString("go\n")
		f.Close()
		boxtest.WaitFile(t, w.Proj+"/late.wrote", nil, nil)
		t.Fatalf("a descendant of the command outlived box and wrote .git/hooks/pre-commit after the audit")
	}
	if !errors.Is(err, unix.ENXIO) {
		t.Fatalf("opening the fifo: %v (want ENXIO: nothing holds it open)", err)
	}
	pid, _ := os.ReadFile(w.Proj + "/late.ready")
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err == nil {
		t.Errorf("the descendant %s is still a process", strings.TrimSpace(string(pid)))
	}
	if _, err := os.Lstat(w.Proj + "/.git/hooks/pre-commit"); err == nil {
		t.Error("the hook was written")
	}
}

// D: a terminal of the user's other than the command's own (here a pty the test owns for
// the user) is neither writable nor readable; the command's own terminal, the one box
// runs on, still is, by its path.
func TestLandlockOtherTerminals(t *testing.T) {
	w := landlockWorld(t)
	om, os_ := boxtest.OpenPty(t) // the user's other terminal
	defer om.Close()
	defer os_.Close()
	boxtest.Must(t, os_.Chown(w.UID, w.GID))
	other, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(os_.Fd())))
	boxtest.Must(t, err)
	m, s := boxtest.OpenPty(t) // box's own terminal
	defer m.Close()
	boxtest.Must(t, s.Chown(w.UID, w.GID))
	screen := boxtest.WatchPTY(m)
	script := `printf INJECTED > ` + other + ` 2>/dev/null && echo BREACH-WRITE-OTHER
head -c 0 < ` + other + ` 2>/dev/null && echo BREACH-READ-OTHER
ls /dev/pts >/dev/null 2>&1 && echo BREACH-LIST-PTS
echo own > "$(tty)" && echo OWN-TERMINAL-WRITE
echo DONE-PROBES`
	c := w.Cmd("run", "-p", "ll", "-y", "-q", "--isolation", "landlock", "--", "sh", "-c", script)
	c.Stdin, c.Stdout, c.Stderr = s, s, s
	boxtest.Must(t, c.Start())
	s.Close()
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	screen.WaitFor(t, 0, "DONE-PROBES", 2*time.Minute)
	if err := <-waited; err != nil {
		t.Errorf("box run: %v", err)
	}
	out := screen.String()
	t.Logf("on the terminal:\n%s", out)
	if strings.Contains(out, "BREACH") {
		t.Errorf("the Landlock mode let the sandbox reach another terminal (%s):\n%s", other, out)
	}
	if !strings.Contains(out, "OWN-TERMINAL-WRITE") {
		t.Errorf("the command could not open its own terminal by its path")
	}
}

// The drill's rows for A, B and D in the Landlock mode: PASS; in a test build with each
// protection off (the instance directory granted whole, no reaping, /dev/pts and /dev
// granted), BREACH, and the drill fails. It drills the rows' groups twice; the rows' own
// probes are one short run.
func TestLandlockHardenDrillRows(t *testing.T) {
	w := landlockWorld(t)
	ids := []string{drill.HardenRecordID, drill.HardenTerminalID, drill.HardenDescendantID}
	rows := func() (map[string]drill.Result, int) {
		// Only the rows' groups: ll's pids is the hard limit (RLIMIT_NPROC counts every
		// task of the user), and the whole drill's limits:pids row forked up to it, past
		// the machine's pid_max: every fork on the host failed (a vm test's container
		// among them) while it ran.
		r := w.Run("drill", "-p", "ll", "--isolation", "landlock", "--group", "trust,kernel", "--json")
		var rs []drill.Result
		if err := json.Unmarshal([]byte(r.Stdout), &rs); err != nil {
			t.Fatalf("box drill --json: %v (exit %d)\n%s", err, r.Code, r.Stderr)
		}
		out := map[string]drill.Result{}
		for _, x := range rs {
			out[x.ID] = x
		}
		return out, r.Code
	}
	got, _ := rows()
	for _, id := range ids {
		if got[id].Status != drill.Pass {
			t.Errorf("%s: %s %s", id, got[id].Status, got[id].Observed)
		}
	}
	w.WithProtectionOff(t, bwrap.ProtLandlockHome+","+bwrap.ProtReap+","+bwrap.ProtLandlockTerminals)
	got, code := rows()
	for _, id := range ids {
		if got[id].Status != drill.Breach {
			t.Errorf("protection off: %s: %s %s", id, got[id].Status, got[id].Observed)
		}
	}
	if code != 1 {
		t.Errorf("the breaches did not fail the drill: exit %d", code)
	}
}

// The Landlock mode shares box's terminal, and the command set its exclusive flag
// (TIOCEXCL; field test, session 10): after the run every open of that terminal by your
// own programs failed with EBUSY (a new shell's /dev/tty, ssh's and sudo's password
// prompts, tmux), until a `TIOCNXCL` or a new terminal. The tty group of box's syscall
// filter now refuses it, as it refuses TIOCSTI.
func TestLandlockTerminalExclusive(t *testing.T) {
	s := landlockOnTerminal(t, landlockWorld(t), `print ioctl(STDOUT, 0x540C, 0) ? "EXCL-SET\n" : "EXCL-REFUSED $!\n"; print "DONE-PROBES\n"`)
	excl, err := unix.IoctlGetInt(int(s.Fd()), unix.TIOCGEXCL)
	boxtest.Must(t, err)
	if excl != 0 {
		t.Errorf("after the Landlock run your terminal is left exclusive: every open of it by you fails (EBUSY)")
	}
}

// landlockOnTerminal runs perl script in the Landlock mode on a terminal of the user's
// (its stdio), which the script ends by printing DONE-PROBES; it returns the terminal
// after box has exited.
func landlockOnTerminal(t *testing.T, w *boxtest.World, script string) *os.File {
	t.Helper()
	testenv.RequireTool(t, "perl")
	m, s := boxtest.OpenPty(t)
	t.Cleanup(func() { s.Close(); m.Close() })
	boxtest.Must(t, s.Chown(w.UID, w.GID))
	screen := boxtest.WatchPTY(m)
	c := w.Cmd("run", "-p", "ll", "-y", "-q", "--isolation", "landlock", "--", "perl", "-e", script)
	c.Stdin, c.Stdout, c.Stderr = s, s, s
	boxtest.Must(t, c.Start())
	screen.WaitFor(t, 0, "DONE-PROBES", 2*time.Minute)
	if err := c.Wait(); err != nil {
		t.Errorf("box run: %v", err)
	}
	t.Logf("on the terminal:\n%s", screen.String())
	return s
}

// The drill's kernel:tty-exclusive row in the Landlock mode: the command shares
// box's terminal, and the filter refuses the exclusive flag, so the drill's terminal is
// not left exclusive (PASS); with box's syscall filter off (a test build), the flag
// outlives the run (BREACH).
func TestLandlockDrillTerminalRow(t *testing.T) {
	w := landlockWorld(t)
	row := func() drill.Result {
		return kernelDrillRows(t, w, "landlock", "kernel:tty-exclusive")["kernel:tty-exclusive"]
	}
	if got := row(); got.Status != drill.Pass {
		t.Errorf("kernel:tty-exclusive: %s %s", got.Status, got.Observed)
	}
	// Two layers since box puts the shared terminal back after the run (session 13):
	// the filter and that restore.
	w.WithProtectionOff(t, bwrap.ProtSeccomp+","+bwrap.ProtTerminal)
	if got := row(); got.Status != drill.Breach {
		t.Errorf("filter off: kernel:tty-exclusive: %s %s", got.Status, got.Observed)
	} else {
		t.Logf("filter off: %s %s", got.Status, got.Observed)
	}
}

// The drill's kernel:screen row in both modes: the probe leaves its terminal concealed,
// in line drawing and on the alternate screen; box resets the screen before it prints
// its report (PASS: the bwrap mode's relay, the Landlock mode's reset of the terminal it
// shares); with that off in a test build, the screen stays hidden (BREACH).
func TestDrillScreenRow(t *testing.T) {
	w := landlockWorld(t)
	box, env := w.Box, w.Env // the release build
	for _, mode := range []string{"bwrap", "landlock"} {
		w.Box, w.Env = box, env
		if got := kernelDrillRows(t, w, mode, "kernel:screen")["kernel:screen"]; got.Status != drill.Pass {
			t.Errorf("%s: kernel:screen: %s %s", mode, got.Status, got.Observed)
		}
		w.WithProtectionOff(t, bwrap.ProtTerminal)
		if got := kernelDrillRows(t, w, mode, "kernel:screen")["kernel:screen"]; got.Status != drill.Breach {
			t.Errorf("%s, terminal off: kernel:screen: %s %s", mode, got.Status, got.Observed)
		}
	}
}

// The Landlock mode shares box's terminal, so what the command writes reaches it
// unfiltered (NOT HELD); but the screen state it leaves is put back before box prints
// its audit report, as after a bwrap run: a command that left concealed text on (SGR 8)
// and the line-drawing character set hid the report that box moved its planted
// repository aside, and garbled every letter of the shell after it (field review,
// session 15).
func TestLandlockScreenResetBeforeReport(t *testing.T) {
	w := landlockWorld(t)
	testenv.RequireTool(t, "git")
	m, s := boxtest.OpenPty(t)
	t.Cleanup(func() { s.Close(); m.Close() })
	boxtest.Must(t, s.Chown(w.UID, w.GID))
	screen := boxtest.WatchPTY(m)
	c := w.Cmd("run", "-p", "ll", "-y", "--isolation", "landlock", "--", "sh", "-c",
		`printf 'before\033[8m\033(0'; git init -q planted; echo done`)
	c.Stdin, c.Stdout, c.Stderr = s, s, s
	boxtest.Must(t, c.Start())
	if err := c.Wait(); err != nil {
		t.Fatalf("box run: %v\n%q", err, screen.String())
	}
	screen.WaitFor(t, 0, "planted", 2*time.Minute) // the audit's report
	out := screen.String()
	conceal := strings.Index(out, "\x1b[8m")
	reset := strings.LastIndex(out, "\x1b[0m\x1b[?47l")
	report := strings.LastIndex(out, "planted")
	if conceal < 0 || reset < conceal || report < reset {
		t.Errorf("no reset between the command's conceal (at %d) and box's report (at %d): reset at %d\n%q", conceal, report, reset, out)
	}
}
