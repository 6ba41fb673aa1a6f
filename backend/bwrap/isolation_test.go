package bwrap

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// The mode comes from the flag, else the profile, else bwrap; what the Landlock mode
// cannot give is refused by name.
func TestIsolationResolve(t *testing.T) {
	plan := func(tier policy.Tier) *Plan { return &Plan{Spec: Spec{Network: tier}} }
	prof := &profiles.Profile{Isolation: "auto"}
	p := plan(policy.NetNone)
	if err := p.resolveIsolation(Request{Profile: prof}); err != nil || p.Isolation.Mode != IsolationAuto {
		t.Fatalf("profile's auto: %v %v", p.Isolation.Mode, err)
	}
	var ae *LandlockABIError // a kernel without ABI 4 refuses the mode by name
	if err := p.resolveIsolation(Request{Profile: prof, Isolation: "landlock"}); (err != nil && !errors.As(err, &ae)) || !p.Isolation.Landlock() {
		t.Fatalf("the flag over the profile: %v %v", p.Isolation.Mode, err)
	}
	if err := p.resolveIsolation(Request{Profile: &profiles.Profile{}}); err != nil || p.Isolation.Mode != IsolationBwrap {
		t.Fatalf("default: %v %v", p.Isolation.Mode, err)
	}
	if err := p.resolveIsolation(Request{Isolation: "chroot"}); err == nil {
		t.Error("an unknown mode was accepted")
	}
	var te *LandlockTierError
	if err := plan(policy.NetInternet).resolveIsolation(Request{Isolation: "landlock"}); !errors.As(err, &te) {
		t.Errorf("tier internet: %v", err)
	}
	// auto with another tier is not refused before a launch shows bwrap cannot start.
	if err := plan(policy.NetInternet).resolveIsolation(Request{Isolation: "auto"}); err != nil {
		t.Errorf("auto, tier internet: %v", err)
	}
	var ie *IsolationError
	for name, c := range map[string]struct {
		p *Plan
		r Request
	}{
		"mounts":     {plan(policy.NetNone), Request{Isolation: "landlock", Profile: &profiles.Profile{Mounts: []profiles.Mount{{Path: "/srv"}}}}},
		"persistent": {plan(policy.NetNone), Request{Isolation: "landlock", Persistent: &Persistent{Name: "b"}}},
		"nix store":  {&Plan{Spec: Spec{Network: policy.NetNone, NixStore: "/x"}}, Request{Isolation: "landlock"}},
		"nix daemon": {&Plan{Spec: Spec{Network: policy.NetNone, NixDaemon: true}}, Request{Isolation: "landlock"}},
	} {
		if err := c.p.resolveIsolation(c.r); !errors.As(err, &ie) {
			t.Errorf("%s: %v, want an IsolationError", name, err)
		}
	}
}

// Every launch in the mode says each item that does not hold, one line each.
func TestIsolationLines(t *testing.T) {
	p := &Plan{Isolation: IsolationPlan{Mode: IsolationLandlock}, Spec: Spec{Workdir: "/w", ReadOnly: []string{"/w/.envrc", "/elsewhere/x"}}}
	lines := p.IsolationLines()
	if !strings.HasPrefix(lines[0], "isolation: landlock") {
		t.Errorf("first line: %q", lines[0])
	}
	var notHeld int
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "NOT HELD: ") {
			t.Errorf("line %q", l)
		}
		notHeld++
	}
	if notHeld < len(LandlockNotHeld)+1 || !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "(.envrc)") }) {
		t.Errorf("NOT HELD lines: %q", lines)
	}
	if l := (&Plan{Isolation: IsolationPlan{Mode: IsolationBwrap}}).IsolationLines(); len(l) != 1 || l[0] != "isolation: bwrap" {
		t.Errorf("bwrap: %q", l)
	}
}

// The home box sets is the mode's home in the instance directory, whose root (the trust
// record, the run lock) is never granted; the probe runner's bind is named by its source.
func TestLandlockEnvironAndCommand(t *testing.T) {
	p := &Plan{
		Spec: Spec{Home: "/home/u", InstanceDir: "/d/inst", StateDir: ".claude", Workdir: "/w", Command: []string{"/run/box-probe", "x"},
			Tools: []Tool{{Name: "claude", Path: "/opt/claude/bin/claude"}}},
		Vars: []envaudit.Var{{Name: "HOME", Value: "/home/u", Origin: "box"}, {Name: "GIT_CONFIG_SYSTEM", Value: "/home/u/.claude/box-gitconfig", Origin: "box"},
			{Name: "PATH", Value: "/home/u/.box/bin:/usr/bin", Origin: "box"}, {Name: "LANG", Value: "/home/u", Origin: "base"}},
		Isolation: IsolationPlan{Mode: IsolationLandlock, binds: []Mount{{Src: "/usr/local/bin/box", Dst: "/run/box-probe"}}},
	}
	env := envaudit.Environ(p.landlockVars())
	for _, want := range []string{"HOME=/d/inst/home", "GIT_CONFIG_SYSTEM=/d/inst/.claude/box-gitconfig", "LANG=/home/u", "TMPDIR=/d/inst/home/tmp"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %q", want, env)
		}
	}
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") && strings.HasSuffix(e, ":/opt/claude/bin") }) {
		t.Errorf("PATH: %q", env)
	}
	if c := p.landlockCommand(); c[0] != "/usr/local/bin/box" || c[1] != "x" {
		t.Errorf("command: %q", c)
	}
	lp := p.LandlockPlan()
	if !slices.Contains(lp.ReadOnly, "/usr/local/bin/box") || !slices.Contains(lp.ReadOnly, "/opt/claude/bin/claude") || !slices.Equal(lp.ReadWrite, []string{"/w", "/d/inst/.claude", "/d/inst/home"}) {
		t.Errorf("plan: %+v", lp)
	}
}

// auto falls back on every diagnosed cause, AppArmor's included (recorded facts: the
// restriction on, no profile for this bwrap, bwrap's own words), and never on an
// unrecognised failure or a plain error.
func TestAutoFallsBack(t *testing.T) {
	aa := DiagnoseUserns(UsernsFacts{Bwrap: "/usr/bin/bwrap", AppArmorRestrict: "1", MaxUserNS: "15000", AppArmor: true,
		Profiles: []string{"unconfined (unconfined)"}, TrialRan: true, TrialErr: errors.New("exit status 1"),
		TrialStderr: "bwrap: setting up uid map: Permission denied"})
	if aa.Cause != UsernsAppArmorRestrict {
		t.Fatalf("recorded AppArmor facts diagnosed as %s", aa.Cause)
	}
	children := DiagnoseUserns(UsernsFacts{Bwrap: "/usr/bin/bwrap", AppArmorRestrict: "1", AppArmor: true,
		Profiles: []string{"bwrap (unconfined)", "unpriv_bwrap (enforce)"}, TrialRan: true, TrialErr: errors.New("exit status 1"),
		TrialStderr: "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted"})
	unknown := DiagnoseUserns(UsernsFacts{Bwrap: "/usr/bin/bwrap", MaxUserNS: "15000", TrialRan: true, TrialErr: errors.New("exit status 1"), TrialStderr: "bwrap: mount: Operation not permitted"})
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&UsernsError{UsernsDiagnosis: aa}, true},
		{&UsernsError{UsernsDiagnosis: children}, true},
		{&UsernsError{UsernsDiagnosis: UsernsDiagnosis{Cause: UsernsSeccomp}}, true},
		{&UsernsError{UsernsDiagnosis: UsernsDiagnosis{Cause: UsernsMaxZero}}, true},
		{&UsernsError{UsernsDiagnosis: UsernsDiagnosis{Cause: UsernsCloneOff}}, true},
		{&UsernsError{UsernsDiagnosis: UsernsDiagnosis{Cause: UsernsProcMasked}}, true},
		{&UsernsError{UsernsDiagnosis: unknown}, false},
		{errors.New("something else"), false},
	} {
		if got := autoFallsBack(c.err); got != c.want {
			t.Errorf("autoFallsBack(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// The Landlock dry run's lines: the rules, the command, the environment's names, in
// that order, and the mode's NOT HELD lines after them.
func TestLandlockLines(t *testing.T) {
	p := &Plan{
		Spec:      Spec{Home: "/home/u", InstanceDir: "/d/inst", StateDir: ".claude", Workdir: "/w", Command: []string{"claude", "-c"}, Network: "none"},
		Vars:      []envaudit.Var{{Name: "HOME", Value: "/home/u", Origin: "box"}, {Name: "PATH", Value: "/usr/bin", Origin: "box"}},
		Isolation: IsolationPlan{Mode: IsolationLandlock},
	}
	lines := p.LandlockLines()
	want := []string{"landlock: read-only ", "landlock: read-write /w /d/inst/.claude /d/inst/home", "landlock: devices ",
		"landlock: network tier none (sockets: AF_UNIX only; TCP bind and connect refused)", "landlock: rlimits nproc 0, address space 0 bytes",
		"landlock: refused unless on the caller: prlimit64 setpriority ioprio_set sched_setaffinity sched_setscheduler sched_setparam sched_setattr; System V IPC refused",
		"command: claude -c", "env: HOME PATH", "isolation: landlock"}
	if len(lines) < len(want) {
		t.Fatalf("lines: %q", lines)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want it to start %q", i, lines[i], w)
		}
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "NOT HELD: ") }) {
		t.Errorf("no NOT HELD line: %q", lines)
	}
}
