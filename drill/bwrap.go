package drill

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

// BwrapOptions is what the bwrap drill was asked, already checked by the CLI.
type BwrapOptions struct {
	Expect      policy.Tier // the contract judged ("" = the sandbox's tier)
	InternetURL string
	HostPort    int
	LAN         []string
	// Tier allowlist's targets (see Input).
	AllowedURL string
	RebindURLs []string
	UDP        string
	// Box: a persistent box is drilled (its home holds its own files at the real
	// home's paths).
	Box bool
	// Groups: only these groups' rows are drilled (groups.go; zero value: all).
	Groups Groups
}

// Bwrap is the bwrap drill: the probe runner launched through the bwrap session in
// the sandbox box run (or a box) would build, its observations judged.
type Bwrap struct {
	// Session launches the runner; its Stderr is the operator's (warnings, the
	// runner's own stderr, the audit's report when not only the drill's plants).
	Session *bwrap.Session
	Options BwrapOptions
	Environ []string // the operator's environment, as the probes see it
	// Resolve builds the drilled sandbox's plan with command as its command and binds
	// added; release undoes what it took (a box's lock) once the drill is over.
	Resolve func(command []string, binds []bwrap.Mount) (p *bwrap.Plan, release func(), err error)
}

// BwrapReport is what a bwrap drill found, and what it drilled.
type BwrapReport struct {
	Results []Result
	Profile string      // the drilled profile's name
	Tier    policy.Tier // the sandbox's network tier
	LeftOut []string    // the groups not drilled (Options.Groups), to be said aloud
	Empty   []string    // the chosen groups with no row in this sandbox
}

// ErrAllowlistTargets: the allowlist's targets were given to a drill that does not
// judge as allowlist (the CLI words it with its flags).
var ErrAllowlistTargets = errors.New("the allowed URL, rebind URLs and UDP target are for the allowlist contract")

// InternetAllowedError: the "name not allowed" probe's URL names a host the allowlist
// allows (the CLI words it with its flag).
type InternetAllowedError struct{ URL, Host string }

func (e *InternetAllowedError) Error() string {
	return fmt.Sprintf("internet URL %s: %s is allowed", e.URL, e.Host)
}

// RunnerError: the probe runner failed inside the sandbox (no observations).
type RunnerError struct{ Code int }

func (e *RunnerError) Error() string {
	return fmt.Sprintf("the probe runner failed inside the sandbox (exit %d)", e.Code)
}

// Run drills: it plants the protect fixture, resolves the sandbox, sets up the kernel
// rows and the abstract marker, launches the runner with its plan on stdin, and judges
// what it observed.
func (b *Bwrap) Run() (*BwrapReport, error) {
	s, o := b.Session, b.Options
	stderr := s.Stderr // the runner's may become the terminal row's pty
	if err := s.RecoverAudits(); err != nil {
		return nil, err
	}
	nonce := make([]byte, 6)
	rand.Read(nonce)
	// The protect group's fixture, made before the scan so box protects it as it
	// protects the operator's own repositories; removed whatever happens. Made once no
	// other run is under way in the tree (WaitQuiet), whose audit would move it aside.
	if err := s.WaitQuiet(); err != nil {
		return nil, err
	}
	var fixture *Fixture
	if wd, err := os.Getwd(); err == nil {
		if wd, err = filepath.EvalSymlinks(wd); err == nil {
			home, _ := os.UserHomeDir()
			RemoveStale(wd, home) // what a killed drill left
			if fixture, err = MakeFixture(wd, hex.EncodeToString(nonce)); err != nil {
				fmt.Fprintf(stderr, "box: warning: the protect probes' fixture: %v\n", err)
				fixture = nil
			} else {
				defer fixture.Remove()
				if home, err := os.UserHomeDir(); err == nil {
					if home, err = filepath.EvalSymlinks(home); err == nil {
						err = fixture.LinkHome(home)
					}
					if err != nil {
						fmt.Fprintf(stderr, "box: warning: the protect probes' home link: %v\n", err)
					}
				}
			}
		}
	}

	// The sandbox is box run's, with one addition: the box binary, read-only, as the
	// probe runner, and the runner as the command.
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("locating the box binary for the probe runner: %w", err)
	}
	probe := []string{ProbePath, ProbeSubcommand}
	binds := []bwrap.Mount{{Src: exe, Dst: ProbePath}}
	p, unlock, err := b.Resolve(probe, binds)
	if err == nil && p.Isolation.Mode == bwrap.IsolationAuto {
		// Whether auto falls back is known before the plants (a trial sandbox), so its
		// Landlock mode's refusal of the fixture's credential comes here, not at launch.
		if err = p.ChooseIsolation(stderr); err != nil {
			unlock()
		}
	}
	var credErr *bwrap.GitCredsError
	if errors.As(err, &credErr) && fixture != nil && fixture.GitCred != "" {
		// The Landlock mode refuses the fixture's planted credential (gitcreds.go): the
		// protection holding. The drill goes on without it, and the row says so.
		if err = fixture.DropGitCred(); err == nil {
			p, unlock, err = b.Resolve(probe, binds)
		}
		if err == nil && p.Isolation.Mode == bwrap.IsolationAuto {
			if err = p.ChooseIsolation(stderr); err != nil {
				unlock()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	defer unlock()

	var entered []string
	for _, v := range p.Vars {
		if v.Origin != "box" {
			entered = append(entered, v.Name)
		}
	}
	environ := b.Environ
	kernel, release, err := bwrapKernel(p, stderr)
	if err != nil {
		return nil, err
	}
	defer release()
	facts := Gather(p.Spec.Home, os.Getuid(), environ)
	facts.GitCommon = GitCommon(p.Spec.Workdir)
	// An abstract socket of the drill's own, in box's network namespace (the host's):
	// the abstract row always has one that answers, whatever the host listens on.
	if name, stop, err := abstractMarker(hex.EncodeToString(nonce)); err == nil {
		defer stop()
		facts.Abstract = append(facts.Abstract, name)
	} else {
		fmt.Fprintf(stderr, "box: warning: the drill's own abstract socket: %v (the abstract row probes the host's only)\n", err)
	}
	defer StartUnixMarker(p.Spec.Workdir, hex.EncodeToString(nonce), stderr)()
	// The agent's state directory, where the link-out row plants (removed after).
	agentState, agentInside := "", ""
	if p.Spec.InstanceDir != "" && p.Spec.StateDir != "" {
		agentState = filepath.Join(p.Spec.InstanceDir, p.Spec.StateDir)
		agentInside = filepath.Join(p.Spec.Home, p.Spec.StateDir)
		if p.Isolation.Landlock() {
			agentInside = agentState // no mount: the sandbox writes it at its real path
		}
		defer os.RemoveAll(filepath.Join(agentState, "box-drill-"+hex.EncodeToString(nonce)))
	}
	in := Input{
		Home: p.Spec.Home, Workdir: p.Spec.Workdir, UID: os.Getuid(),
		Tier: p.Spec.Network, Expect: o.Expect,
		Environ: environ, Entered: entered, AuthPassthrough: p.Profile.AuthPassthrough,
		NixDaemon:   p.Profile.Nix == profiles.NixDaemon,
		NixStore:    p.Profile.Nix == profiles.NixStore,
		Facts:       facts,
		InternetURL: o.InternetURL, HostPort: o.HostPort, LANTargets: o.LAN,
		Nonce: hex.EncodeToString(nonce), Kernel: kernel.in,
		Limits:  bwrapLimits(p.Spec),
		Fixture: fixture, Dropped: p.Protect.Dropped, ReadOnly: p.Protect.ReadOnly(),
		SystemGitCreds: p.SystemGitCreds, BoxDirs: p.BoxDirs,
		AgentState: agentState, AgentStateInside: agentInside,
		AbstractScoped: p.Spec.ScopeAbstract,
	}
	for _, m := range p.Spec.Mounts {
		if fixture != nil && m.Dst != m.Src && strings.HasPrefix(fixture.HpConfig(), m.Src+"/") && in.GitCredVia == "" {
			in.GitCredVia = filepath.Join(m.Dst, strings.TrimPrefix(fixture.HpConfig(), m.Src))
		}
		if fi, err := os.Stat(m.Src); err == nil && fi.IsDir() && m.RW && m.Src == m.Dst &&
			!strings.HasPrefix(m.Src+"/", p.Spec.Workdir+"/") && !strings.HasPrefix(p.Spec.Workdir+"/", m.Src+"/") {
			in.RWMounts = append(in.RWMounts, m.Src)
		}
	}
	if err := allowlistInput(&in, p.Spec, o); err != nil {
		return nil, err
	}
	plan, err := BuildPlan(in)
	if err != nil {
		return nil, err
	}
	plan.Probes = append(plan.Probes, DevShellProbes(p.Vars)...) // devshell.go
	ports := startPorts(p, &plan, facts.Addrs, hex.EncodeToString(nonce))
	defer ports.stop()
	defer sshAgentRows(p, hex.EncodeToString(nonce), &plan, stderr)()
	// The plan is whole: the groups left out go here, before anything runs.
	plan.Probes = o.Groups.Probes(plan.Probes)
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}

	pr, err := s.Prepare(p)
	if err != nil {
		return nil, err
	}
	var out, audit bytes.Buffer
	// The runner reads its plan on stdin and writes its observations on stdout; the
	// audit's report is held back until the drill's own plants are told apart.
	s.Stdin, s.Stdout, s.AuditOut = bytes.NewReader(planJSON), &out, &audit
	if kernel.tty != nil {
		s.Stderr = kernel.tty.slave
	}
	code, rep, err := s.Supervise(p, pr)
	stillChanged, stillExclusive := kernel.tty.changed()
	roots, todo := append([]string{p.Spec.Workdir}, in.RWMounts...), ""
	if facts.GitCommon != "" {
		roots = append(roots, filepath.Join(facts.GitCommon, "worktrees"))
		todo = filepath.Join(facts.GitCommon, "rebase-merge", "git-rebase-todo")
	}
	if !forgetPlants(roots, todo, hex.EncodeToString(nonce), rep) {
		stderr.Write(audit.Bytes()) // something besides the drill's own plants
	}
	if err != nil {
		return nil, err
	}
	var obs []Observation
	if code != 0 || json.Unmarshal(out.Bytes(), &obs) != nil {
		return nil, &RunnerError{code}
	}
	obs = SettleTerminal(obs, stillChanged)
	obs = SettleTermExclusive(obs, stillExclusive)
	if kernel.tty != nil {
		obs = SettleTermStrings(obs, kernel.tty.seen.Bytes(), hex.EncodeToString(nonce)) // terminal.go
		obs = SettleScreen(obs, kernel.tty.seen.Bytes(), hex.EncodeToString(nonce))
	}
	obs = ports.settle(obs) // publish.go: what the outside saw of the ports
	// Settle runs the host's git where the probes planted, after the audit: as the
	// operator would, once the run is over.
	obs = Settle(plan, obs)
	if o.Box {
		obs = OwnFiles(plan, obs) // a box's home holds its own files at the real home's paths
	}
	results := Judge(plan, obs)
	if o.Groups.Keep("trust") {
		results = append(results, b.trustRows(p, hex.EncodeToString(nonce))...)  // trust.go: two runs of their own each
		results = append(results, b.boxSessionRow(p, hex.EncodeToString(nonce))) // boxsession.go: a box of its own, two sessions
		results = append(results, b.linkSwapRow(p))                              // linkswap.go: a scratch project, two runs
		results = append(results, b.warnNamesRow(p, hex.EncodeToString(nonce)))  // warnnames.go: a scratch project, one launch
		results = append(results, b.mountGuardRow(p))                            // mountguard.go: two projects, one read-write mount
	}
	if o.Groups.Keep("protect") {
		results = append(results, b.keptRepoRow(p, hex.EncodeToString(nonce)))     // kept.go: a run of its own
		results = append(results, b.staleListingRow(p, hex.EncodeToString(nonce))) // listing.go: two runs of their own
	}
	// The Landlock mode's own rows (harden.go): the bwrap mode holds them by construction
	// (a pid namespace ends every descendant, once box has waited for it: sandboxend.go;
	// the instance directory is not mounted, no /dev/pts of the host's), and in it their
	// probe run hung a CI drill on its stderr.
	if p.Isolation.Landlock() && (o.Groups.Keep("trust") || o.Groups.Keep("kernel")) {
		results = append(results, b.hardenRows(p, hex.EncodeToString(nonce))...)
	}
	// The bwrap mode's own: bwrap exits before the rest of its pid namespace has ended
	// (sandboxend.go).
	if !p.Isolation.Landlock() && o.Groups.Keep("kernel") {
		results = append(results, b.sandboxEndRow(p, hex.EncodeToString(nonce)))
	}
	results = o.Groups.Results(IsolationVerdicts(p, results)) // isolation.go
	return &BwrapReport{Results: results, Profile: p.Profile.Name, Tier: p.Spec.Network,
		LeftOut: o.Groups.LeftOut(), Empty: o.Groups.Empty(results)}, nil
}

// allowlistInput fills what tier allowlist's rows need when the drill judges as
// allowlist: the allowed URL (default: the first exact name allowed), the address the
// --internet-url host has on the host, and the rebind and UDP targets. The --internet-url
// host must be one the allowlist refuses.
func allowlistInput(in *Input, spec bwrap.Spec, o BwrapOptions) error {
	expect := o.Expect
	if expect == "" {
		expect = spec.Network
	}
	if !expect.Proxied() {
		if o.AllowedURL != "" || len(o.RebindURLs) > 0 || o.UDP != "" {
			return ErrAllowlistTargets
		}
		return nil
	}
	u, _ := url.Parse(o.InternetURL)
	ps, err := policy.ParseAllow(spec.Allow)
	if err != nil {
		return err
	}
	for _, pt := range ps {
		if pt.Matches(policy.NormalizeName(u.Hostname()), portOf(u)) {
			return &InternetAllowedError{URL: o.InternetURL, Host: u.Hostname()}
		}
	}
	in.AllowedURL, in.RebindURLs, in.UDPTarget = o.AllowedURL, o.RebindURLs, o.UDP
	if in.AllowedURL == "" {
		for _, pt := range ps {
			if !pt.Wildcard && (pt.Port == 0 || pt.Port == 443) {
				in.AllowedURL = "https://" + pt.Host + "/"
				break
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", u.Hostname()); err == nil && len(addrs) > 0 {
		in.Facts.InternetAddr = addrs[0]
	}
	return nil
}

// portOf is u's port, or its scheme's.
func portOf(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// bwrapLimits are the bounds of the drilled sandbox, as the resolver set them.
func bwrapLimits(s bwrap.Spec) Limits {
	l := Limits{Pids: s.Limits.Pids, Memory: s.Limits.Memory, Tmpfs: []TmpfsBound{
		{Path: "/tmp", Size: s.Tmpfs.Tmp}, {Path: "/var/tmp", Size: s.Tmpfs.VarTmp},
		{Path: "/dev/shm", Size: s.Tmpfs.Shm},
	}}
	if s.HomeDir == "" {
		// A persistent box's home is its own directory on the host's disk, not a tmpfs:
		// like the working directory, it is not sized.
		l.Tmpfs = append(l.Tmpfs, TmpfsBound{Path: s.Home, Size: s.Tmpfs.Home})
	}
	return l
}

// forgetPlants removes from the quarantine what the audit moved aside of the drill's own
// plants (every one lies under ROOT/.box-drill-*NONCE* for one of roots: the working
// directory, and the common git directory's worktrees/; Settle removes the rest of
// them; and the todo list the main-rebase row plants at the fixed path todo, when every
// copy the audit kept holds the nonce), and the quarantine directory when nothing else is
// in it. It reports whether the audit found only those.
func forgetPlants(roots []string, todo, nonce string, rep *postrun.Report) bool {
	if rep == nil {
		return false
	}
	own := func(f postrun.Finding) bool {
		if todo != "" && f.Path == todo && len(f.Kept) > 0 {
			for _, k := range f.Kept {
				if b, err := os.ReadFile(k); err != nil || !strings.Contains(string(b), nonce) {
					return false
				}
			}
			return true
		}
		p := f.Path
		for _, root := range roots {
			rel, err := filepath.Rel(root, p)
			top, _, _ := strings.Cut(rel, "/")
			if err == nil && strings.HasPrefix(top, ".box-drill-") && strings.Contains(top, nonce) {
				return true
			}
		}
		return false
	}
	only := rep.Incomplete == ""
	for _, f := range rep.Findings {
		if f.Error != "" || !own(f) {
			only = false
			continue
		}
		for _, k := range f.Kept {
			os.RemoveAll(k)
		}
	}
	if only && rep.Quarantine != "" {
		os.RemoveAll(rep.Quarantine)
	}
	return only
}

// abstractMarker listens on the abstract socket @box-drill-NONCE and accepts (and
// closes) every connection until stop; name is without the @, as Facts lists them.
func abstractMarker(nonce string) (name string, stop func(), err error) {
	name = "box-drill-" + nonce
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		return "", nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return name, func() { l.Close() }, nil
}
