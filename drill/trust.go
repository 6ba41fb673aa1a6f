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
//
// trust:landlock-after-bwrap is the same with a narrow run in bwrap and a wide run, at
// the same tier, in the Landlock mode, which holds less (no pid namespace, the host's
// terminal): a hostile review (session 18) found the Landlock run started on what the
// bwrap run planted.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/shellquote"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// The trust rows' ids.
const (
	TrustRowID         = "trust:wider-run"
	TrustHostPortRowID = "trust:wider-host-port"
	TrustLandlockRowID = "trust:landlock-after-bwrap"
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
	mode := trustWide{id: TrustLandlockRowID, probe: "a bwrap run's hook, in a run of the same project and profile in the Landlock mode",
		tier: policy.NetNone, narrow: string(bwrap.IsolationBwrap), isolation: string(bwrap.IsolationLandlock), what: "the Landlock-mode run"}
	if p.Isolation.Landlock() {
		return []Result{full, {ID: port.id, Group: "trust", Probe: port.probe, Expected: "the wider run starts without it",
			Status: Skip, Observed: "the Landlock mode has no network namespace of its own: box refuses host ports there"},
			{ID: mode.id, Group: "trust", Probe: mode.probe, Expected: "the wider run starts without it",
				Status: Skip, Observed: "drilled in the Landlock mode: the narrow run needs bwrap"}}
	}
	if abi := bwrap.LandlockABI(); abi < 4 {
		return []Result{full, b.trustRow(p, nonce, port), {ID: mode.id, Group: "trust", Probe: mode.probe, Expected: "the wider run starts without it",
			Status: Skip, Observed: fmt.Sprintf("the Landlock mode needs Landlock ABI 4, this kernel has %d", abi)}}
	}
	return []Result{full, b.trustRow(p, nonce, port), b.trustRow(p, nonce, mode)}
}

// trustWide is a trust row's wide run: its tier, host ports and isolation mode ("": the
// profile's), and the narrow run's mode.
type trustWide struct {
	id, probe, what   string
	tier              policy.Tier
	hostPorts         []uint16
	narrow, isolation string
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
	// The mode row's runs are in a scratch project: the Landlock mode refuses the drilled
	// one, whose fixture holds a git config credential it cannot hide.
	proj := ""
	if wide.narrow != "" {
		if proj, err = filepath.EvalSymlinks(scratch); err == nil {
			proj = filepath.Join(proj, "proj")
			err = os.Mkdir(proj, 0o755)
		}
		if err != nil {
			return fail("scratch project: %v", err)
		}
	}
	run := func(tier policy.Tier, hostPorts []uint16, isolation, script string) (string, string, error) {
		if proj != "" {
			code, _, out, errOut, err := b.ownRunIn(p, filepath.Join(scratch, "data"), ownRunOpts{Tree: proj, Isolation: isolation}, "sh", "-c", script)
			if err == nil && code != 0 {
				err = fmt.Errorf("exit %d", code)
			}
			return out, errOut, err
		}
		s := *b.Session
		var out, errb bytes.Buffer
		s.Outside.DataHome, s.Yes, s.DryRun = scratch, true, false
		s.Stdin, s.Stdout, s.Stderr, s.AuditOut, s.StdinTTY = bytes.NewReader(nil), &out, &errb, &errb, nil
		ran, err := s.Run(bwrap.Request{Profile: prof, Template: p.Template, Network: string(tier), HostPorts: hostPorts, Isolation: isolation, Command: []string{"sh", "-c", script}})
		if err == nil && ran.Code != 0 {
			err = fmt.Errorf("exit %d", ran.Code)
		}
		return out.String(), errb.String(), err
	}
	// The state as the agent finds it, in either mode: ~/STATEDIR (the Landlock mode's
	// home is the instance directory's, where it is a link to the state).
	in := `"$HOME"/` + shellquote.Quote(p.Spec.StateDir)
	plant := fmt.Sprintf(`mkdir -p %[1]s && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo %[2]s"}]}]}}' > %[1]s/settings.json && echo %[2]s >> %[1]s/CLAUDE.md`, in, mark)
	if _, errOut, err := run(policy.NetNone, nil, wide.narrow, plant); err != nil {
		return fail("the narrow run (tier none) could not plant: %v %s", err, strings.TrimSpace(errOut))
	}
	out, errOut, err := run(wide.tier, wide.hostPorts, wide.isolation, fmt.Sprintf(`cat %[1]s/settings.json %[1]s/CLAUDE.md 2>/dev/null; true`, in))
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
