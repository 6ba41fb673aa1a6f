package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

type drillOptions struct {
	backend     string
	profile     string
	template    string
	network     string
	expect      string
	env         []string
	json        bool
	internetURL string
	hostPort    int
	lan         []string
	allow       []string // tier allowlist, as box run --allow
	allowedURL  string
	rebindURLs  []string
	udp         string
	image       string // --backend vm
	unitDir     string // --backend vm
	box         string // a persistent bwrap box (drillbox.go)
}

func newDrillCmd(e *env) *cobra.Command {
	o := &drillOptions{}
	cmd := &cobra.Command{
		Use:     "drill [flags]",
		Short:   "prove the sandbox's isolation: run probes inside it and report each claim",
		GroupID: groupSandbox,
		Long: `Run a suite of probes INSIDE a sandbox built from your profile exactly as 'box run'
would build it (same environment allowlist, mounts, tools and network tier), and print
one row per probe: what the contract expects, what the probe observed, and the verdict.

Probes: the secret paths of your home (~/.ssh, ~/.aws, ~/.gnupg, cloud CLIs' tokens...),
secret-looking environment variables, /run/user, agent sockets and docker.sock, host
abstract unix sockets, host PIDs, privilege escalation (no_new_privs, capabilities, a
setuid-root binary, user namespaces), writes outside the working directory, what the
host would run later (a git hook, core.fsmonitor, core.hooksPath, a nested repository's
config, a worktree's .git pointer, .envrc, a VS Code folderOpen task, agent settings
hooks, a rebase stopped with an exec line, a dotfile your home links to: planted inside a
throwaway fixture in the working directory, then git, direnv, VS Code, Claude Code and a
shell's actions are done on the host and checked for a marker), and per
network tier: the internet, the LAN, the host's own addresses, the sandbox's gateway and
the cloud metadata address. Tier allowlist adds: an allowed name works (--allowed-url); a
name not allowed (--internet-url), the same host by address, allowed names that resolve
to private addresses (--rebind-url), UDP (--udp) and ICMP out are refused.

Verdicts: PASS; BREACH (something the contract blocks was seen); FAIL (something the
contract promises does not work); WARN (exposed by your own choice: an allowlisted
secret-looking variable, tier full, auth passthrough); SKIP (not applicable here, with
the reason, e.g. "absent on host"); ERROR (the probe could not run). box drill exits 1 on
any BREACH, FAIL or ERROR.

--expect judges the sandbox against another tier's contract: 'box drill --network full
--expect internet' reports every LAN, host and metadata address the sandbox reaches as a
BREACH. By default the contract is the tier the sandbox runs with.`,
		Example: `  box drill --backend bwrap                        # the default profile
  box drill --profile claude                       # the sandbox Claude Code gets
  box drill --network internet --json              # for machines (fields: docs/json.md)
  box drill --network full --expect internet       # what tier full exposes, as breaches
  box drill -n allowlist --allow @github --internet-url http://example.com/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDrill(e, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.box, "box", "", "drill inside this persistent bwrap box (its stamped profile, template and tier, its own home)")
	f.StringVar(&o.backend, "backend", "", "backend to drill: bwrap, or vm (the host stack, two boxes probed live, every verb against an instance box did not mint, and what each granted user could ask incusd)")
	f.StringVar(&o.image, "image", "", "removed: the vm drill mints from a template (--template), as box new does")
	_ = f.MarkHidden("image")
	f.StringVar(&o.unitDir, "unit-dir", "/etc/systemd/system", "with --backend vm: where setup-host wrote the boot unit")
	_ = f.MarkHidden("unit-dir")
	f.StringVarP(&o.profile, "profile", "p", "", "profile whose sandbox is drilled (default $BOX_PROFILE, else \"default\")")
	f.StringVarP(&o.template, "template", "t", "", "template (default: the profile's; with --backend vm: the boxes' template, default "+vm.DefaultTemplate+")")
	f.StringVarP(&o.network, "network", "n", "", "network tier of the sandbox: "+policy.TierList("or")+" (default: the profile's)")
	f.StringVar(&o.expect, "expect", "", "judge against this tier's contract: "+policy.TierList("or")+" (default: the sandbox's tier)")
	f.StringArrayVarP(&o.env, "env", "e", nil, "let the variable NAME enter, as box run --env does (repeatable)")
	f.BoolVar(&o.json, "json", false, "print the results as a JSON array (fields: docs/json.md)")
	f.StringVar(&o.internetURL, "internet-url", drill.DefaultInternetURL, "URL the internet probe fetches")
	f.IntVar(&o.hostPort, "host-port", 0, "TCP port of a host service for the host-address probe (default: the ports the host listens on)")
	f.StringArrayVar(&o.lan, "lan", nil, "a LAN host to probe, ADDR:PORT (repeatable; the gateway and ARP neighbours are probed anyway)")
	f.StringArrayVar(&o.allow, "allow", nil, "with --network allowlist: allow NAME, as box run --allow does (repeatable)")
	f.StringVar(&o.allowedURL, "allowed-url", "", "tier allowlist: a URL whose host is allowed, which must work (default: https://FIRST-ALLOWED-NAME/)")
	f.StringArrayVar(&o.rebindURLs, "rebind-url", nil, "tier allowlist: a URL of an allowed host that resolves to a private address, which must be refused (repeatable)")
	f.StringVar(&o.udp, "udp", "", "tier allowlist: ADDR:PORT a UDP datagram is sent to (default: the --internet-url host, port 123)")
	return cmd
}

func runDrill(e *env, o *drillOptions) error {
	if o.backend != "" {
		if err := profiles.ValidBackend(o.backend); err != nil {
			return usagef("the backends are bwrap and vm", "--backend: %s", err)
		}
		if o.backend == profiles.BackendVM {
			return runDrillVM(e, o)
		}
	}
	if o.expect != "" {
		if err := profiles.ValidNetwork(o.expect); err != nil {
			return usagef("the tiers are "+policy.TierList("and"), "--expect: %s", err)
		}
	}
	if u, err := url.Parse(o.internetURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("for example --internet-url http://example.com/", "--internet-url %q: want an http or https URL", o.internetURL)
	}
	if o.hostPort < 0 || o.hostPort > 65535 {
		return usagef("a TCP port, 1-65535", "--host-port %d: out of range", o.hostPort)
	}
	for _, t := range o.lan {
		if _, err := netip.ParseAddrPort(t); err != nil {
			return usagef("for example --lan 192.168.1.10:80", "--lan %q: want ADDR:PORT", t)
		}
	}

	for _, u := range append([]string{o.allowedURL}, o.rebindURLs...) {
		if pu, err := url.Parse(u); u != "" && (err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "") {
			return usagef("for example --allowed-url https://github.com/", "%q: want an http or https URL", u)
		}
	}
	if o.udp != "" {
		if ap, err := netip.ParseAddrPort(o.udp); err != nil || ap.Port() == 53 {
			return usagef("for example --udp 203.0.113.10:123 (not port 53: tier allowlist answers DNS itself)", "--udp %q: want ADDR:PORT", o.udp)
		}
	}

	s := e.session(false)
	if err := s.RecoverAudits(); err != nil {
		return err
	}
	nonce := make([]byte, 6)
	rand.Read(nonce)
	// The protect group's fixture, made before the scan so box protects it as it
	// protects the operator's own repositories; removed whatever happens.
	var fixture *drill.Fixture
	if wd, err := os.Getwd(); err == nil {
		if wd, err = filepath.EvalSymlinks(wd); err == nil {
			if fixture, err = drill.MakeFixture(wd, hex.EncodeToString(nonce)); err != nil {
				fmt.Fprintf(e.stderr, "box: warning: the protect probes' fixture: %v\n", err)
				fixture = nil
			} else {
				defer fixture.Remove()
				if home, err := os.UserHomeDir(); err == nil {
					if home, err = filepath.EvalSymlinks(home); err == nil {
						err = fixture.LinkHome(home)
					}
					if err != nil {
						fmt.Fprintf(e.stderr, "box: warning: the protect probes' home link: %v\n", err)
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
		return fmt.Errorf("locating the box binary for the probe runner: %w", err)
	}
	probe := []string{drill.ProbePath, drill.ProbeSubcommand}
	binds := []bwrap.Mount{{Src: exe, Dst: drill.ProbePath}}
	p, unlock, err := drillBox(e, s, o, probe, binds)
	if err != nil {
		return err
	}
	defer unlock()
	if p == nil {
		req, err := runRequest(e, &runOptions{
			profile: o.profile, backend: o.backend, template: o.template, network: o.network, env: o.env,
			allow: o.allow, command: probe,
		})
		if err != nil {
			return err
		}
		req.Binds = binds
		if p, err = s.Resolve(req); err != nil {
			return err
		}
	}

	var entered []string
	for _, v := range p.Vars {
		if v.Origin != "box" {
			entered = append(entered, v.Name)
		}
	}
	environ := e.environ()
	kernel, release, err := drillKernel(p, e.stderr)
	if err != nil {
		return err
	}
	defer release()
	facts := drill.Gather(p.Spec.Home, os.Getuid(), environ)
	// An abstract socket of the drill's own, in box's network namespace (the host's):
	// the abstract row always has one that answers, whatever the host listens on.
	if name, stop, err := abstractMarker(hex.EncodeToString(nonce)); err == nil {
		defer stop()
		facts.Abstract = append(facts.Abstract, name)
	} else {
		fmt.Fprintf(e.stderr, "box: warning: the drill's own abstract socket: %v (the abstract row probes the host's only)\n", err)
	}
	in := drill.Input{
		Home: p.Spec.Home, Workdir: p.Spec.Workdir, UID: os.Getuid(),
		Tier: p.Spec.Network, Expect: policy.Tier(o.expect),
		Environ: environ, Entered: entered, AuthPassthrough: p.Profile.AuthPassthrough,
		NixDaemon:   p.Profile.Nix == profiles.NixDaemon,
		NixStore:    p.Profile.Nix == profiles.NixStore,
		Facts:       facts,
		InternetURL: o.internetURL, HostPort: o.hostPort, LANTargets: o.lan,
		Nonce: hex.EncodeToString(nonce), Kernel: kernel.in,
		Limits:  drillLimits(p.Spec),
		Fixture: fixture, Dropped: p.Protect.Dropped,
		AbstractScoped: p.Spec.ScopeAbstract,
	}
	if err := allowlistInput(&in, p.Spec, o); err != nil {
		return err
	}
	plan, err := drill.BuildPlan(in)
	if err != nil {
		return err
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return err
	}

	pr, err := s.Prepare(p)
	if err != nil {
		return err
	}
	var out, audit bytes.Buffer
	// The runner reads its plan on stdin and writes its observations on stdout; the
	// audit's report is held back until the drill's own plants are told apart.
	s.Stdin, s.Stdout, s.AuditOut = bytes.NewReader(planJSON), &out, &audit
	if kernel.tty != nil {
		s.Stderr = kernel.tty.slave
	}
	code, rep, err := s.Supervise(p, pr)
	stillChanged := kernel.tty.changed()
	if !forgetPlants(p.Spec.Workdir, hex.EncodeToString(nonce), rep) {
		e.stderr.Write(audit.Bytes()) // something besides the drill's own plants
	}
	if err != nil {
		return err
	}
	var obs []drill.Observation
	if code != 0 || json.Unmarshal(out.Bytes(), &obs) != nil {
		return withHint(fmt.Errorf("the probe runner failed inside the sandbox (exit %d)", code),
			"run 'box --check' to diagnose the sandbox")
	}
	obs = drill.SettleTerminal(obs, stillChanged)
	// Settle runs the host's git where the probes planted, after the audit: as the
	// operator would, once the run is over.
	obs = drill.Settle(plan, obs)
	if o.box != "" {
		obs = drill.OwnFiles(plan, obs) // a box's home holds its own files at the real home's paths
	}
	results := drill.Judge(plan, obs)
	if o.json {
		err = drill.RenderJSON(e.stdout, results)
	} else {
		err = drill.Render(e.stdout, results)
	}
	if err != nil {
		return err
	}
	what := fmt.Sprintf("profile %s, tier %s", p.Profile.Name, p.Spec.Network)
	if o.expect != "" && policy.Tier(o.expect) != p.Spec.Network {
		what += ", judged as " + o.expect
	}
	if drill.Failed(results) {
		return fmt.Errorf("drill (%s): %s", what, drill.Summary(results))
	}
	fmt.Fprintf(e.stderr, "box: drill (%s): %s\n", what, drill.Summary(results))
	return nil
}

// allowlistInput fills what tier allowlist's rows need when the drill judges as
// allowlist: the allowed URL (default: the first exact name allowed), the address the
// --internet-url host has on the host, and the rebind and UDP targets. The --internet-url
// host must be one the allowlist refuses.
func allowlistInput(in *drill.Input, spec bwrap.Spec, o *drillOptions) error {
	expect := policy.Tier(o.expect)
	if expect == "" {
		expect = spec.Network
	}
	if !expect.Proxied() {
		if o.allowedURL != "" || len(o.rebindURLs) > 0 || o.udp != "" {
			return usagef("add --network allowlist, or --expect allowlist", "--allowed-url, --rebind-url and --udp are for the allowlist contract")
		}
		return nil
	}
	u, _ := url.Parse(o.internetURL)
	ps, err := policy.ParseAllow(spec.Allow)
	if err != nil {
		return err
	}
	for _, pt := range ps {
		if pt.Matches(policy.NormalizeName(u.Hostname()), portOf(u)) {
			return usagef("give --internet-url a host the allowlist refuses (it is the 'name not allowed' probe)",
				"--internet-url %s: %s is allowed", o.internetURL, u.Hostname())
		}
	}
	in.AllowedURL, in.RebindURLs, in.UDPTarget = o.allowedURL, o.rebindURLs, o.udp
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

// drillLimits are the bounds of the drilled sandbox, as the resolver set them.
func drillLimits(s bwrap.Spec) drill.Limits {
	l := drill.Limits{Pids: s.Limits.Pids, Memory: s.Limits.Memory, Tmpfs: []drill.TmpfsBound{
		{Path: "/tmp", Size: s.Tmpfs.Tmp}, {Path: "/var/tmp", Size: s.Tmpfs.VarTmp},
		{Path: "/dev/shm", Size: s.Tmpfs.Shm},
	}}
	if s.HomeDir == "" {
		// A persistent box's home is its own directory on the host's disk, not a tmpfs:
		// like the working directory, it is not sized.
		l.Tmpfs = append(l.Tmpfs, drill.TmpfsBound{Path: s.Home, Size: s.Tmpfs.Home})
	}
	return l
}

// forgetPlants removes from the quarantine what the audit moved aside of the drill's own
// plants (every one lies under WORKDIR/.box-drill-*NONCE*; Settle removes the rest of
// them), and the quarantine directory when nothing else is in it. It reports whether the
// audit found only those.
func forgetPlants(workdir, nonce string, rep *postrun.Report) bool {
	if rep == nil {
		return false
	}
	only := rep.Incomplete == ""
	for _, f := range rep.Findings {
		rel, err := filepath.Rel(workdir, f.Path)
		top, _, _ := strings.Cut(rel, "/")
		if err != nil || f.Error != "" || !strings.HasPrefix(top, ".box-drill-") || !strings.Contains(top, nonce) {
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
// closes) every connection until stop; name is without the @, as drill.Facts lists them.
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
