package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
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
setuid-root binary, user namespaces), writes outside the working directory, and per
network tier: the internet, the LAN, the host's own addresses, the sandbox's gateway and
the cloud metadata address.

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
  box drill --network full --expect internet       # what tier full exposes, as breaches`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDrill(e, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.box, "box", "", "drill inside this persistent bwrap box (its stamped profile, template and tier, its own home)")
	f.StringVar(&o.backend, "backend", "", "backend to drill: bwrap, or vm (the host stack, two boxes probed live, every verb against an instance box did not mint)")
	f.StringVar(&o.image, "image", "images:debian/12/cloud", "with --backend vm: the image of the two drill boxes")
	f.StringVar(&o.unitDir, "unit-dir", "/etc/systemd/system", "with --backend vm: where setup-host wrote the boot unit")
	_ = f.MarkHidden("unit-dir")
	f.StringVarP(&o.profile, "profile", "p", "", "profile whose sandbox is drilled (default $BOX_PROFILE, else \"default\")")
	f.StringVarP(&o.template, "template", "t", "", "template (default: the profile's)")
	f.StringVarP(&o.network, "network", "n", "", "network tier of the sandbox: none, internet or full (default: the profile's)")
	f.StringVar(&o.expect, "expect", "", "judge against this tier's contract: none, internet or full (default: the sandbox's tier)")
	f.StringArrayVarP(&o.env, "env", "e", nil, "let the variable NAME enter, as box run --env does (repeatable)")
	f.BoolVar(&o.json, "json", false, "print the results as a JSON array (fields: docs/json.md)")
	f.StringVar(&o.internetURL, "internet-url", drill.DefaultInternetURL, "URL the internet probe fetches")
	f.IntVar(&o.hostPort, "host-port", 0, "TCP port of a host service for the host-address probe (default: the ports the host listens on)")
	f.StringArrayVar(&o.lan, "lan", nil, "a LAN host to probe, ADDR:PORT (repeatable; the gateway and ARP neighbours are probed anyway)")
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
			return usagef("the tiers are none, internet and full", "--expect: %s", err)
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

	// The sandbox is box run's, with one addition: the box binary, read-only, as the
	// probe runner, and the runner as the command.
	probe := []string{drill.ProbePath, drill.ProbeSubcommand}
	p, unlock, err := drillBox(e, o, probe)
	if err != nil {
		return err
	}
	defer unlock()
	if p == nil {
		if p, err = resolveRun(e, &runOptions{
			profile: o.profile, backend: o.backend, template: o.template, network: o.network, env: o.env,
			command: probe,
		}); err != nil {
			return err
		}
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(e.stderr, "box: warning: %s\n", w)
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("locating the box binary for the probe runner: %w", err)
	}
	p.Spec.Mounts = append(p.Spec.Mounts, bwrap.Mount{Src: exe, Dst: drill.ProbePath})

	var entered []string
	for _, v := range p.Vars {
		if v.Origin != "box" {
			entered = append(entered, v.Name)
		}
	}
	nonce := make([]byte, 6)
	rand.Read(nonce)
	environ := e.environ()
	plan, err := drill.BuildPlan(drill.Input{
		Home: p.Spec.Home, Workdir: p.Spec.Workdir, UID: os.Getuid(),
		Tier: p.Spec.Network, Expect: o.expect,
		Environ: environ, Entered: entered, AuthPassthrough: p.Profile.AuthPassthrough,
		NixDaemon:   p.Profile.Nix == profiles.NixDaemon,
		NixStore:    p.Profile.Nix == profiles.NixStore,
		Facts:       drill.Gather(p.Spec.Home, os.Getuid(), environ),
		InternetURL: o.internetURL, HostPort: o.hostPort, LANTargets: o.lan,
		Nonce: hex.EncodeToString(nonce),
	})
	if err != nil {
		return err
	}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		return err
	}

	pr, err := bwrap.Prepare(p, e.getenv("BOX_INTERNET_HELPER"))
	if err != nil {
		return err
	}
	bin, err := bwrap.LookBwrap()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	code, err := p.Start(pr, bin, bytes.NewReader(planJSON), &out, e.stderr)
	if err != nil {
		return err
	}
	var obs []drill.Observation
	if code != 0 || json.Unmarshal(out.Bytes(), &obs) != nil {
		return withHint(fmt.Errorf("the probe runner failed inside the sandbox (exit %d)", code),
			"run 'box --check' to diagnose the sandbox")
	}
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
	if o.expect != "" && o.expect != p.Spec.Network {
		what += ", judged as " + o.expect
	}
	if drill.Failed(results) {
		return fmt.Errorf("drill (%s): %s", what, drill.Summary(results))
	}
	fmt.Fprintf(e.stderr, "box: drill (%s): %s\n", what, drill.Summary(results))
	return nil
}
