package drill

// The hostile review's rows (session 7), run for real through the session box run uses,
// in the drilled plan's mode and a scratch data directory: one narrow run whose command
// tries to rewrite its instance directory's trust record (harden:trust-record), to open a
// terminal of yours that is not its own (harden:other-terminal), and leaves a descendant
// in a session of its own waiting on a fifo (harden:descendant): when box's run is over,
// a writer can open that fifo only while the descendant lives. Each seen: BREACH.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/pty"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/sys/unix"
)

// The rows' ids.
const (
	HardenRecordID     = "harden:trust-record"
	HardenTerminalID   = "harden:other-terminal"
	HardenDescendantID = "harden:descendant"
)

// hardenRows runs the probe run and judges its three rows.
func (b *Bwrap) hardenRows(p *bwrap.Plan, nonce string) []Result {
	rows := []Result{
		{ID: HardenRecordID, Group: "trust", Probe: "write the instance directory's trust record (box-reach.json)", Expected: "refused"},
		{ID: HardenTerminalID, Group: "kernel", Probe: "open another terminal of yours (a pty the drill holds) for writing and reading", Expected: "refused"},
		{ID: HardenDescendantID, Group: "kernel", Probe: "a descendant in a session of its own outlives the run", Expected: "ended with the command, before the audit"},
	}
	fail := func(format string, a ...any) []Result {
		for i := range rows {
			rows[i].Status, rows[i].Observed = Error, fmt.Sprintf(format, a...)
		}
		return rows
	}
	scratch, err := os.MkdirTemp("", "box-drill-harden-")
	if err != nil {
		return fail("scratch data directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	m, s, err := pty.Open()
	if err != nil {
		return fail("a pty for the other-terminal probe: %v", err)
	}
	defer m.Close()
	defer s.Close()
	other, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(s.Fd())))
	if err != nil {
		return fail("the pty's path: %v", err)
	}
	// A profile of its own (the drilled one's settings may need a tier), with its pids:
	// RLIMIT_NPROC counts all your processes in the Landlock mode.
	prof := profiles.Profile{Name: "box-drill-harden", Network: policy.NetNone, Template: p.Template.Name, Source: "the drill", Pids: p.Profile.Pids}
	inst := bwrap.InstanceDir(scratch, p.Spec.Workdir, prof.Name)
	base := filepath.Join(p.Spec.Workdir, ".box-drill-harden-"+nonce)
	defer os.Remove(base + ".fifo")
	defer os.Remove(base + ".ready")
	rows[0].Targets, rows[1].Targets, rows[2].Targets = []string{filepath.Join(inst, bwrap.ReachFile)}, []string{other}, []string{base + ".fifo"}
	script := fmt.Sprintf(`printf x >> %[1]q 2>/dev/null && echo HARDEN-RECORD
printf x > %[2]q 2>/dev/null && echo HARDEN-TERMINAL-WRITE
head -c 0 < %[2]q 2>/dev/null && echo HARDEN-TERMINAL-READ
mkfifo %[3]q && setsid sh -c 'exec 3<>%[3]s; echo $$ > %[4]s; read x <&3' </dev/null >/dev/null 2>&1 &
while [ ! -s %[4]q ]; do sleep 0.01; done
echo HARDEN-STARTED`, filepath.Join(inst, bwrap.ReachFile), other, base+".fifo", base+".ready")
	sess := *b.Session
	var out, errb bytes.Buffer
	sess.Outside.DataHome, sess.Yes, sess.DryRun = scratch, true, false
	sess.Stdin, sess.Stdout, sess.Stderr, sess.AuditOut, sess.StdinTTY = bytes.NewReader(nil), &out, &errb, &errb, nil
	ran, err := sess.Run(bwrap.Request{Profile: &prof, Template: p.Template, Network: string(policy.NetNone),
		Isolation: string(p.Isolation.Mode), Command: []string{"sh", "-c", script}})
	if err == nil && ran.Code != 0 {
		err = fmt.Errorf("exit %d", ran.Code)
	}
	if err != nil || !strings.Contains(out.String(), "HARDEN-STARTED") {
		return fail("the probe run: %v %s %s", err, strings.TrimSpace(out.String()), strings.TrimSpace(errb.String()))
	}
	judge := func(r *Result, breach bool, seen, held string) {
		r.Status, r.Observed = Pass, held
		if breach {
			r.Status, r.Observed = Breach, seen
		}
	}
	rec, _ := os.ReadFile(filepath.Join(inst, bwrap.ReachFile))
	judge(&rows[0], strings.Contains(out.String(), "HARDEN-RECORD") || bytes.HasSuffix(rec, []byte("x")),
		"the sandbox wrote the trust record a wider run is compared with", "the record is out of the sandbox's reach")
	var what []string
	for _, w := range []string{"WRITE", "READ"} {
		if strings.Contains(out.String(), "HARDEN-TERMINAL-"+w) {
			what = append(what, strings.ToLower(w))
		}
	}
	judge(&rows[1], len(what) > 0, "the sandbox opened "+other+" for "+strings.Join(what, " and "), "refused")
	f, ferr := os.OpenFile(base+".fifo", os.O_WRONLY|unix.O_NONBLOCK, 0)
	if ferr == nil {
		f.Close()
		if b, _ := os.ReadFile(base + ".ready"); len(b) > 0 {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 1 {
				unix.Kill(pid, unix.SIGKILL) // seen: the drill ends it
			}
		}
	}
	judge(&rows[2], ferr == nil, "a descendant of the command lived on after box's run and its audit ended",
		"no process of the run was left")
	if ferr != nil && !errors.Is(ferr, unix.ENXIO) {
		rows[2].Status, rows[2].Observed = Error, "the fifo: "+ferr.Error()
	}
	return rows
}
