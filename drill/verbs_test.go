package drill

import (
	"errors"
	"strings"
	"testing"
)

// TestJudgeVerbs: each way a verb can cross the tag boundary turns the row into a
// BREACH, and only all refusals on an unchanged instance pass.
func TestJudgeVerbs(t *testing.T) {
	frozen := func() Frozen {
		return Frozen{Config: map[string]string{"user.owner": "not-box", "volatile.eth0.hwaddr": "00:16:3e:00:00:01"},
			Devices: map[string]map[string]string{}, Profiles: []string{"box-net"}, Status: "Running", Snapshots: 0, Pid: 42}
	}
	refused := func() []VerbOutcome {
		var outs []VerbOutcome
		for _, a := range VerbProbes("payroll-drill-abcdef") {
			outs = append(outs, VerbOutcome{Args: a, Code: 1,
				Stderr: `box: error: instance "payroll-drill-abcdef" ` + NotBoxMessage + "\nbox: hint: ...\n"})
		}
		return outs
	}
	if seen, detail := JudgeVerbs(refused(), frozen(), frozen(), nil, false); seen || !strings.Contains(detail, "14 verbs refused it") {
		t.Errorf("all refused: seen=%t %q", seen, detail)
	}
	for _, tc := range []struct {
		name  string
		brk   func(outs []VerbOutcome, after *Frozen, afterErr *error, cloned *bool)
		wants string
	}{
		{"a verb accepts", func(o []VerbOutcome, _ *Frozen, _ *error, _ *bool) { o[2] = VerbOutcome{Args: o[2].Args} }, "exec: accepted"},
		{"a verb fails otherwise", func(o []VerbOutcome, _ *Frozen, _ *error, _ *bool) {
			o[4].Stderr = "box: error: disk full\n"
		}, "snapshot: exit 1 without the tag-boundary error: box: error: disk full"},
		{"a verb hangs", func(o []VerbOutcome, _ *Frozen, _ *error, _ *bool) {
			o[3] = VerbOutcome{Args: o[3].Args, Err: errors.New("still running after its time-out: killed")}
		}, "shell: still running"},
		{"config changes", func(_ []VerbOutcome, a *Frozen, _ *error, _ *bool) { a.Config["user.drill"] = "breached" }, "config changed: user.drill"},
		{"a device appears", func(_ []VerbOutcome, a *Frozen, _ *error, _ *bool) {
			a.Devices["eth1"] = map[string]string{"type": "nic"}
		}, "devices changed"},
		{"profiles change", func(_ []VerbOutcome, a *Frozen, _ *error, _ *bool) { a.Profiles = []string{"default"} }, "profiles"},
		{"it is stopped", func(_ []VerbOutcome, a *Frozen, _ *error, _ *bool) { a.Status = "Stopped" }, "state Running → Stopped"},
		{"it is restarted", func(_ []VerbOutcome, a *Frozen, _ *error, _ *bool) { a.Pid = 43 }, "restarted"},
		{"a snapshot appears", func(_ []VerbOutcome, a *Frozen, _ *error, _ *bool) { a.Snapshots = 1 }, "snapshots 0 → 1"},
		{"it is gone", func(_ []VerbOutcome, _ *Frozen, e *error, _ *bool) { *e = errors.New("not found") }, "gone"},
		{"it is cloned", func(_ []VerbOutcome, _ *Frozen, _ *error, c *bool) { *c = true }, "a clone of it was made"},
	} {
		outs, after := refused(), frozen()
		var afterErr error
		cloned := false
		tc.brk(outs, &after, &afterErr, &cloned)
		seen, detail := JudgeVerbs(outs, frozen(), after, afterErr, cloned)
		if !seen || !strings.Contains(detail, tc.wants) {
			t.Errorf("%s: seen=%t %q, want a breach naming %q", tc.name, seen, detail, tc.wants)
		}
	}
}
