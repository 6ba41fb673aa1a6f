package drill

// The trust row (issue 19, breach 3): what persists for the agent must not be written by
// a narrow run and obeyed by a wider one. The drill runs the two for real through the
// session box run uses, in a scratch data directory (so the operator's own instance
// directories are never set aside): a tier-none run plants a SessionStart hook in the
// agent's settings and a line in its instructions, then a tier-full run of the same
// project and profile looks for them. Seen there: BREACH.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// TrustRowID is the trust row's id.
const TrustRowID = "trust:wider-run"

// trustRow runs the narrow and the wide run with the drilled plan's template and judges
// what the wide one found.
func (b *Bwrap) trustRow(p *bwrap.Plan, nonce string) Result {
	r := Result{ID: TrustRowID, Group: "trust", Probe: "a narrow run's hook, in a wider run of the same project and profile",
		Expected: "the wider run starts without it"}
	fail := func(format string, a ...any) Result {
		r.Status, r.Observed = Error, fmt.Sprintf(format, a...)
		return r
	}
	scratch, err := os.MkdirTemp("", "box-drill-trust-")
	if err != nil {
		return fail("scratch data directory: %v", err)
	}
	defer os.RemoveAll(scratch)
	state := filepath.Join(p.Spec.Home, p.Spec.StateDir)
	r.Targets = []string{filepath.Join(state, "settings.json")}
	mark := "box-drill-trust-" + nonce
	prof := &profiles.Profile{Name: "box-drill-trust", Network: policy.NetNone, Template: p.Template.Name, Source: "the drill"}
	run := func(tier policy.Tier, script string) (string, string, error) {
		s := *b.Session
		var out, errb bytes.Buffer
		s.Outside.DataHome, s.Yes, s.DryRun = scratch, true, false
		s.Stdin, s.Stdout, s.Stderr, s.AuditOut, s.StdinTTY = bytes.NewReader(nil), &out, &errb, &errb, nil
		ran, err := s.Run(bwrap.Request{Profile: prof, Template: p.Template, Network: string(tier), Command: []string{"sh", "-c", script}})
		if err == nil && ran.Code != 0 {
			err = fmt.Errorf("exit %d", ran.Code)
		}
		return out.String(), errb.String(), err
	}
	plant := fmt.Sprintf(`mkdir -p %[1]q && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo %[2]s"}]}]}}' > %[1]q/settings.json && echo %[2]s >> %[1]q/CLAUDE.md`, state, mark)
	if _, errOut, err := run(policy.NetNone, plant); err != nil {
		return fail("the narrow run (tier none) could not plant: %v %s", err, strings.TrimSpace(errOut))
	}
	out, errOut, err := run(policy.NetFull, fmt.Sprintf(`cat %[1]q/settings.json %[1]q/CLAUDE.md 2>/dev/null; true`, state))
	if err != nil {
		return fail("the wide run (tier full): %v %s", err, strings.TrimSpace(errOut))
	}
	if strings.Contains(out, mark) {
		r.Status, r.Observed = Breach, "the tier-full run started with the hook and the CLAUDE.md line the tier-none run planted"
		return r
	}
	r.Status, r.Observed = Pass, "the tier-full run started without them"
	if strings.Contains(errOut, "set aside") {
		r.Observed += " (set aside, named)"
	}
	return r
}
