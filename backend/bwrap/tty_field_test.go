package bwrap_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
	"github.com/heavy-duty/box/internal/ttyfilter"
)

// `timeout 20 box run -y -- true` typed at an interactive shell with job control (the
// shell gives timeout's job the terminal, and timeout moves itself and box to a group of
// their own, in the background): box ends with the command's code, the prompt comes
// back, the terminal's modes are the shell's.
func TestTTYFieldTimeoutInInteractiveShell(t *testing.T) {
	bash := testenv.RequireTool(t, "bash")
	timeout := testenv.RequireTool(t, "timeout")
	w := newWorld(t)
	c := w.cmd()
	c.Path, c.Args = bash, []string{"bash", "--norc", "--noprofile", "-i"}
	p := startOnPTY(t, w, c)
	at := p.screen.WaitFor(t, 0, "$ ", within)
	p.typ(t, timeout+" 20 "+w.box+" run -q -y -- true; echo co\"\"de=$?.\r")
	at = p.screen.WaitFor(t, at, "code=", 2*within)
	at = p.screen.WaitFor(t, at, ".", within)
	if s := p.screen.String(); !strings.Contains(s, "code=0.") {
		t.Errorf("want code=0, the terminal shows:\n%q", s)
	}
	p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "exit 0\r")
	p.wait(t)
}

// box shell and box exec -t on a persistent bwrap box, with tmux's TERM: a terminal of
// the command's own (job control on), TERM as the host's, the
// command's exit code as box's.
func TestTTYFieldBwrapBox(t *testing.T) {
	testenv.RequireTool(t, "bash")
	w := newWorld(t)
	w.env = append(slices.DeleteFunc(slices.Clone(w.env), func(e string) bool { return strings.HasPrefix(e, "TERM=") }), "TERM=tmux-256color")
	w.must("new", "--backend", "bwrap", "--name", "term")

	p := startOnPTY(t, w, w.cmd("shell", "-y", "term"))
	at := p.screen.WaitFor(t, 0, "$ ", within)
	p.typ(t, "echo T=$TERM.; test -t 0 && echo IS-A-TTY; exit 4\r")
	at = p.screen.WaitFor(t, at, "T=tmux-256color.", within)
	p.screen.WaitFor(t, at, "IS-A-TTY", within)
	if code := p.wait(t); code != 4 {
		t.Errorf("box shell: exit %d, want 4:\n%q", code, p.screen.String())
	}
	if s := p.screen.String(); strings.Contains(s, "no job control") {
		t.Errorf("box shell: %q", s)
	}

	p = startOnPTY(t, w, w.cmd("exec", "-t", "-y", "term", "--", "sh", "-c", `echo T=$TERM.; test -t 0 && echo IS-A-TTY; exit 5`))
	at = p.screen.WaitFor(t, 0, "T=tmux-256color.", within)
	p.screen.WaitFor(t, at, "IS-A-TTY", within)
	if code := p.wait(t); code != 5 {
		t.Errorf("box exec -t: exit %d, want 5:\n%q", code, p.screen.String())
	}
	if p.modes(t) != p.before {
		t.Errorf("the terminal's modes after box exec -t differ from before")
	}
}

// `box run -y -- bash -i &` then `fg` at an interactive shell: bash's fg sends no SIGCONT
// to a job that was running (box reads nothing in the background, so it never stopped),
// and box waited for one: the terminal stayed cooked, nothing reached the sandbox and
// the shell was stuck (field review, session 16). box now sees the foreground come back
// by itself.
func TestTTYFieldBackgroundThenFg(t *testing.T) {
	backgroundThenFg(t, "", `echo in""side=$BOX_SANDBOX.`, "inside=bwrap.", `echo co""de=$?.`)
}

// backgroundThenFg starts box run (with flags) in the background of an interactive bash
// on a pty, brings it to the front with fg, runs inside (its output must show want),
// exits 3 and checks bash saw that code (code: the echo that prints it).
func backgroundThenFg(t *testing.T, flags, inside, want, code string) {
	w, p, at := interactiveBash(t)
	// The relay runs in the background before fg: the sandbox's first words came through.
	p.typ(t, w.box+" run -q -y "+flags+"-- sh -c 'echo sand\"\"box-up; exec bash --norc --noprofile -i' &\r")
	job := p.screen.WaitFor(t, at, "[1] ", within)
	at = p.screen.WaitFor(t, job, "sandbox-up", within)
	if strings.Contains(flags, "landlock") {
		// The command's bash, in box's group, stops that group (SIGTTIN) until it has the
		// terminal; an fg typed before that races bash's own check (tcgetpgrp, then
		// kill(0, SIGTTIN)), as it would without box: the group stopped in front and the
		// shell took the terminal back (CI, session 21). Typed once the job has stopped,
		// as a user sees it.
		pid, _ := strconv.Atoi(strings.Fields(p.screen.String()[job:])[0])
		for deadline := time.Now().Add(within); state(pid) != "T"; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the background job (box, pid %d) never stopped: state %q", pid, state(pid))
			}
		}
	}
	p.typ(t, "fg\r")
	at = p.screen.WaitFor(t, at, "fg\r\n", within)
	p.typ(t, "PS1=IN\">\"' '\r")
	at = p.screen.WaitFor(t, at, "IN> ", within)
	p.typ(t, inside+"\r")
	at = p.screen.WaitFor(t, at, want, within)
	at = p.screen.WaitFor(t, at, "IN> ", within)
	p.typ(t, "exit 3\r")
	at = p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, code+"\r")
	at = p.screen.WaitFor(t, at, "code=3.", within)
	p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "exit 0\r")
	p.wait(t)
}

// The same in the Landlock mode, where the command shares box's terminal: in the
// background it had a process group of its own, was stopped reading the terminal
// (SIGTTIN), and stayed stopped after fg, which gave the terminal to box's group alone;
// the shell was stuck and Ctrl-C reached box only (field review, session 16). Now it
// shares box's group on a terminal, and box continues the group when it is in front again.
func TestLandlockBackgroundThenFg(t *testing.T) {
	backgroundThenFg(t, "--isolation landlock ", `echo in""side=ok.`, "inside=ok.", `echo co""de=${PIPESTATUS[0]}.`)
}

// Ctrl-Z on a command that is not a shell (an agent, an editor, sleep) at an interactive
// shell suspends box run as it suspends any job: the shell says Stopped and has the
// terminal; fg continues box and the command, which reads what is typed next. In the
// bwrap mode the command led a process group whose parent was outside its session, an
// orphaned group, whose stop signals the kernel drops: ^Z was echoed and nothing
// stopped (a program suspending itself with SIGSTOP hung the terminal instead) (field
// review, session 16).
func TestTTYFieldCtrlZSuspendsBox(t *testing.T) {
	ctrlZSuspends(t, "")
}

// The same in the Landlock mode, where the command shares box's terminal and group.
func TestLandlockCtrlZSuspendsBox(t *testing.T) {
	ctrlZSuspends(t, "--isolation landlock ")
}

func ctrlZSuspends(t *testing.T, flags string) {
	suspends(t, flags, "", "\x1a")
}

// A command that stops itself alone, as node does on Ctrl-Z (SIGTSTP to its own pid, not
// its group), suspends box as Ctrl-Z does. In the Landlock mode box went on waiting for
// the stopped command, the operator's shell for box: the terminal hung (field review,
// session 17).
func TestTTYFieldSelfStopSuspendsBox(t *testing.T) {
	suspends(t, "", "kill -TSTP $$; ", "")
}

func TestLandlockSelfStopSuspendsBox(t *testing.T) {
	suspends(t, "--isolation landlock ", "kill -TSTP $$; ", "")
}

// suspends runs a command that waits for a line at an interactive bash, with stop (sh)
// before it waits and key typed once it waits, and checks bash says Stopped, has the
// terminal, and that fg continues box and the command.
func suspends(t *testing.T, flags, stop, key string) {
	w, p, at := interactiveBash(t)
	p.typ(t, w.box+" run -q -y "+flags+"-- sh -c 'echo wai\"\"ting; "+stop+"read v; echo got-$v.; exit 4'\r")
	at = p.screen.WaitFor(t, at, "waiting", within)
	if key != "" {
		p.typ(t, key)
	}
	at = p.screen.WaitFor(t, at, "Stopped", within)
	at = p.screen.WaitFor(t, at, "$ ", within)
	// The shell has the terminal: what is typed now is its.
	p.typ(t, "echo out\"\"side\r")
	at = p.screen.WaitFor(t, at, "outside", within)
	at = p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "fg\r")
	at = p.screen.WaitFor(t, at, "fg\r\n", within)
	at = p.screen.WaitFor(t, at, "sh -c", within) // bash names the job it continues
	p.typ(t, "ok\r")
	at = p.screen.WaitFor(t, at, "got-ok.", within)
	at = p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "echo co\"\"de=$?.\r")
	at = p.screen.WaitFor(t, at, "code=4.", within)
	p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "exit 0\r")
	p.wait(t)
}

// interactiveBash starts an interactive bash, the operator's shell, on a pty of a new
// world, and waits for its prompt (at: where the screen shows it).
func interactiveBash(t *testing.T) (*world, *onPTY, int) {
	bash := testenv.RequireTool(t, "bash")
	w := newWorld(t)
	c := w.cmd()
	c.Path, c.Args = bash, []string{"bash", "--norc", "--noprofile", "-i"}
	p := startOnPTY(t, w, c)
	return w, p, p.screen.WaitFor(t, 0, "$ ", within)
}

// Only stdout a terminal (stdin a pipe): a command that stops itself is continued at
// once, as before the command ran as a job, since box does not suspend there. It was
// left stopped: box, and the shell, waited on it (field review, session 17).
func TestTTYFieldSelfStopStdinPiped(t *testing.T) {
	w, p, at := interactiveBash(t)
	p.typ(t, "true | "+w.box+" run -q -y -- sh -c 'echo wai\"\"ting; kill -TSTP $$; echo go\"\"ne-on; exit 4'\r")
	at = p.screen.WaitFor(t, at, "waiting", within)
	at = p.screen.WaitFor(t, at, "gone-on", within)
	at = p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "echo co\"\"de=${PIPESTATUS[1]}.\r")
	at = p.screen.WaitFor(t, at, "code=4.", within)
	p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "exit 0\r")
	p.wait(t)
}

// `box run -y -- CMD &` at an interactive shell: box ends in the background while
// another job (here the shell's own wait; in the field an editor) has the terminal. Its
// end-of-run screen reset turned off that job's alternate screen, mouse reporting and
// bracketed paste (field review, session 20), as suspend already knew not to.
func TestTTYFieldBackgroundEndNoReset(t *testing.T) {
	backgroundEndNoReset(t, "")
}

// The same in the Landlock mode, whose reset before the report is its own.
func TestLandlockBackgroundEndNoReset(t *testing.T) {
	backgroundEndNoReset(t, "--isolation landlock ")
}

func backgroundEndNoReset(t *testing.T, flags string) {
	w, p, at := interactiveBash(t)
	start := p.screen.Len()
	p.typ(t, w.box+" run -q -y "+flags+"-- sh -c 'echo sand\"\"box-ran' & wait; echo wai\"\"ted.\r")
	at = p.screen.WaitFor(t, at, "sandbox-ran", within)
	at = p.screen.WaitFor(t, at, "waited.", within)
	if s := p.screen.String()[start:]; strings.Contains(s, ttyfilter.Reset) {
		t.Errorf("box reset the screen from the background:\n%q", s)
	}
	p.screen.WaitFor(t, at, "$ ", within)
	p.typ(t, "exit 0\r")
	p.wait(t)
}
