package drill

// kernel:sandbox-end (the bwrap mode): a run whose command leaves a descendant that
// outlasts the sandbox's pid 1 as long as it can and writes a git hook into a nested
// repository after the post-run audit. bwrap exits as soon as its pid 1 has reported the
// command's code; the rest of the pid namespace ends when pid 1, killed by
// --die-with-parent, is next scheduled, which the same uid can delay: the descendant
// waits for pid 1 to reap the command, then makes it SCHED_IDLE on a CPU kept busy.
// box must have ended every process of the sandbox before its audit (field review,
// session 15). The race is the sandbox's to widen, not to win every time: the probe
// tries several runs and one hook found after a run is the breach.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/sys/unix"
)

// SandboxEndID is the row's id.
const SandboxEndID = "kernel:sandbox-end"

// sandboxEndTries is how many runs the probe makes before it calls the end held.
const sandboxEndTries = 12

// SandboxEndScript is the command (TestSandboxEndsBeforeAudit runs it too) (sh; $1: the nested repository's work tree, in a
// fixture of the working directory): busy loops on CPU 0 with pid 1, and a descendant in
// a session of its own (a Python program; stdio on /dev/null: a pipe box copies would
// hold box until it ends), ignoring TERM, HUP and INT, that waits for pid 1 to reap the
// command, makes pid 1 SCHED_IDLE, and writes the hook in a loop, making the repository
// again whenever the audit has moved it aside.
const SandboxEndScript = `d="$1"
mkdir -p "$d/.git/objects" "$d/.git/refs/heads" "$d/.git/hooks" && echo 'ref: refs/heads/main' > "$d/.git/HEAD" && mkfifo "$d.fifo" || exit 3
taskset -p 1 1 >/dev/null
for i in $(seq 8); do setsid taskset 1 sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 & done
setsid python3 -c '
import os, signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT): signal.signal(s, signal.SIG_IGN)
try: os.sched_setaffinity(0, {1})
except OSError: pass
d, cmd = sys.argv[1], sys.argv[2]
g = d + "/.git"
held = os.open(d + ".fifo", os.O_RDWR)
open(d + ".started", "w").close()
while os.path.exists("/proc/" + cmd):
    pass
try: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0))
except OSError: pass
while True:
    if os.path.exists(g + "/hooks/post-checkout"):
        time.sleep(0.001)
        continue
    try:
        for s in ("objects", "refs/heads", "hooks"):
            os.makedirs(g + "/" + s, exist_ok=True)
        if not os.path.exists(g + "/HEAD"):
            with open(g + "/HEAD", "w") as f: f.write("ref: refs/heads/main\n")
        with open(g + "/hooks/.t", "w") as f: f.write("#!/bin/sh\necho ran > \"$0.ran\"\n")
        os.chmod(g + "/hooks/.t", 0o755)
        os.replace(g + "/hooks/.t", g + "/hooks/post-checkout")
    except OSError:
        pass
' "$d" $$ </dev/null >/dev/null 2>&1 &
while [ ! -e "$d.started" ]; do sleep 0.01; done
echo SANDBOX-END-STARTED`

// sandboxEndRow runs the probe in the bwrap mode, through the session box run uses, in a
// scratch data directory.
func (b *Bwrap) sandboxEndRow(p *bwrap.Plan, nonce string) Result {
	r := Result{ID: SandboxEndID, Group: "kernel", Probe: "a descendant that slows the sandbox's pid 1 writes a git hook after the post-run audit",
		Expected: "every process of the sandbox ended before the audit"}
	scratch, err := os.MkdirTemp("", "box-drill-end-")
	if err != nil {
		r.Status, r.Observed = Error, "scratch data directory: "+err.Error()
		return r
	}
	defer os.RemoveAll(scratch)
	dir := filepath.Join(p.Spec.Workdir, ".box-drill-end-"+nonce)
	hook := filepath.Join(dir, ".git", "hooks", "post-checkout")
	r.Targets = []string{hook, dir + ".fifo"}
	defer os.RemoveAll(dir)
	defer os.Remove(dir + ".started")
	defer os.Remove(dir + ".fifo")
	for _, tool := range []string{"python3", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			r.Status, r.Observed = Skip, "no "+tool+" on this machine: the probe's descendant is a Python program, its busy loops pinned by taskset"
			return r
		}
	}
	prof := profiles.Profile{Name: "box-drill-end", Network: policy.NetNone, Template: p.Template.Name, Source: "the drill", Pids: p.Profile.Pids}
	for try := 1; try <= sandboxEndTries; try++ {
		os.RemoveAll(dir)
		os.Remove(dir + ".started")
		os.Remove(dir + ".fifo")
		sess := *b.Session
		var out, errb bytes.Buffer
		sess.Outside.DataHome, sess.Yes, sess.DryRun = scratch, true, false
		// Where the post-run audit begins, box must have ended the sandbox: a process
		// of it still running there may write after the audit has looked. The
		// descendant holds the fifo open for reading; a writer can open it only while
		// a reader lives.
		aliveAtAudit := false
		sess.Ended = func() { aliveAtAudit = fifoHeld(dir + ".fifo") }
		sess.Stdin, sess.Stdout, sess.Stderr, sess.AuditOut, sess.StdinTTY = bytes.NewReader(nil), &out, &errb, &errb, nil
		ran, err := sess.Run(bwrap.Request{Profile: &prof, Template: p.Template, Network: string(policy.NetNone),
			Isolation: string(p.Isolation.Mode), Command: []string{"sh", "-c", SandboxEndScript, "sandbox-end", dir}})
		if err == nil && ran.Code != 0 {
			err = fmt.Errorf("exit %d", ran.Code)
		}
		if err != nil || !strings.Contains(out.String(), "SANDBOX-END-STARTED") {
			r.Status, r.Observed = Error, fmt.Sprintf("the probe run: %v %s %s", err, strings.TrimSpace(out.String()), strings.TrimSpace(errb.String()))
			return r
		}
		if fifoHeld(dir + ".fifo") {
			r.Status, r.Observed = Breach, fmt.Sprintf("run %d of %d: a process of the sandbox was still running after the run and its post-run audit had ended", try, sandboxEndTries)
			return r
		}
		if _, err := os.Lstat(hook); err == nil {
			r.Status, r.Observed = Breach, fmt.Sprintf("run %d of %d: a process of the sandbox wrote %s after the post-run audit (the audit had moved the repository aside)", try, sandboxEndTries, hook)
			return r
		}
		if aliveAtAudit {
			r.Status, r.Observed = Breach, fmt.Sprintf("run %d of %d: a process of the sandbox was still running when the post-run audit began (it could write after the audit had looked)", try, sandboxEndTries)
			return r
		}
	}
	r.Status, r.Observed = Pass, fmt.Sprintf("in %d runs no process of the sandbox was left when the post-run audit began, none wrote after it", sandboxEndTries)
	return r
}

// fifoHeld reports whether a process holds the fifo at path open for reading: a writer
// can open it (without blocking) only then.
func fifoHeld(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
