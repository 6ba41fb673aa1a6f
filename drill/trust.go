package drill

// The trust row (issue 19, breach 3): what persists for the agent must not be written by
// a narrow run and obeyed by a wider one. The drill runs the two for real through the
// session box run uses, in a scratch data directory (so the operator's own instance
// directories are never set aside): a tier-none run plants a SessionStart hook in the
// agent's settings and a line in its instructions, then a tier-full run of the same
// project and profile looks for them. Seen there: BREACH.
//
// trust:wider-host-port is the same with a wide run that adds only a host port
// (--host-port: the host's loopback port at host.box.internal), which is reach as much as
// a tier (a hostile review found a run with a host port more started on what a narrower
// run planted).

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

// The trust rows' ids.
const (
	TrustRowID         = "trust:wider-run"
	TrustHostPortRowID = "trust:wider-host-port"
)

// trustHostPort is the port the host-port row's wide run names: the wide run only reads
// its state, it never connects.
const trustHostPort = 5432

// trustRows are the trust rows.
func (b *Bwrap) trustRows(p *bwrap.Plan, nonce string) []Result {
	full := b.trustRow(p, nonce, trustWide{id: TrustRowID, probe: "a narrow run's hook, in a wider run of the same project and profile",
		tier: policy.NetFull, what: "the tier-full run"})
	port := trustWide{id: TrustHostPortRowID, probe: "a narrow run's hook, in a run of the same project and profile with a host port more",
		tier: policy.NetNone, hostPorts: []uint16{trustHostPort}, what: fmt.Sprintf("the --host-port %d run", trustHostPort)}
	if p.Isolation.Landlock() {
		return []Result{full, {ID: port.id, Group: "trust", Probe: port.probe, Expected: "the wider run starts without it",
			Status: Skip, Observed: "the Landlock mode has no network namespace of its own: box refuses host ports there"}}
	}
	return []Result{full, b.trustRow(p, nonce, port)}
}

// trustWide is a trust row's wide run: its tier and host ports.
type trustWide struct {
	id, probe, what string
	tier            policy.Tier
	hostPorts       []uint16
}

// trustRow runs the narrow and the wide run with the drilled plan's template and judges
// what the wide one found.
func (b *Bwrap) trustRow(p *bwrap.Plan, nonce string, wide trustWide) Result {
	r := Result{ID: wide.id, Group: "trust", Probe: wide.probe,
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
	run := func(tier policy.Tier, hostPorts []uint16, script string) (string, string, error) {
		s := *b.Session
		var out, errb bytes.Buffer
		s.Outside.DataHome, s.Yes, s.DryRun = scratch, true, false
		s.Stdin, s.Stdout, s.Stderr, s.AuditOut, s.StdinTTY = bytes.NewReader(nil), &out, &errb, &errb, nil
		ran, err := s.Run(bwrap.Request{Profile: prof, Template: p.Template, Network: string(tier), HostPorts: hostPorts, Command: []string{"sh", "-c", script}})
		if err == nil && ran.Code != 0 {
			err = fmt.Errorf("exit %d", ran.Code)
		}
		return out.String(), errb.String(), err
	}
	plant := fmt.Sprintf(`mkdir -p %[1]q && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo %[2]s"}]}]}}' > %[1]q/settings.json && echo %[2]s >> %[1]q/CLAUDE.md`, state, mark)
	if _, errOut, err := run(policy.NetNone, nil, plant); err != nil {
		return fail("the narrow run (tier none) could not plant: %v %s", err, strings.TrimSpace(errOut))
	}
	out, errOut, err := run(wide.tier, wide.hostPorts, fmt.Sprintf(`cat %[1]q/settings.json %[1]q/CLAUDE.md 2>/dev/null; true`, state))
	if err != nil {
		return fail("the wide run (%s): %v %s", wide.what, err, strings.TrimSpace(errOut))
	}
	if strings.Contains(out, mark) {
		r.Status, r.Observed = Breach, wide.what+" started with the hook and the CLAUDE.md line the tier-none run planted"
		return r
	}
	r.Status, r.Observed = Pass, wide.what+" started without them"
	if strings.Contains(errOut, "set aside") {
		r.Observed += " (set aside, named)"
	}
	return r
}
