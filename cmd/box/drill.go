package main

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
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
	isolation   string
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
	groups      []string
}

func newDrillCmd(e *env) *cobra.Command {
	o := &drillOptions{}
	cmd := &cobra.Command{
		Use:     "drill [flags]",
		Short:   "prove the sandbox's isolation: run probes inside it and report each claim",
		GroupID: groupSandbox,
		Long:    helpText("drill"),
		Example: helpText("drill.example"),
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return whileDrilling(func() error { return runDrill(e, o) })
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
	f.StringVar(&o.isolation, "isolation", "", "drill box run's sandbox in this isolation mode: bwrap, landlock or auto, as box run --isolation (rows the Landlock mode does not hold are NOT HELD)")
	f.BoolVar(&o.json, "json", false, "print the results as a JSON array (fields: docs/json.md)")
	f.StringVar(&o.internetURL, "internet-url", drill.DefaultInternetURL, "URL the internet probe fetches")
	f.IntVar(&o.hostPort, "host-port", 0, "TCP port of a host service for the host-address probe (default: the ports the host listens on)")
	f.StringArrayVar(&o.lan, "lan", nil, "a LAN host to probe, ADDR:PORT (repeatable; the gateway and ARP neighbours are probed anyway)")
	f.StringArrayVar(&o.allow, "allow", nil, "with --network allowlist: allow NAME, as box run --allow does (repeatable)")
	f.StringVar(&o.allowedURL, "allowed-url", "", "tier allowlist: a URL whose host is allowed, which must work (default: https://FIRST-ALLOWED-NAME/)")
	f.StringArrayVar(&o.rebindURLs, "rebind-url", nil, "tier allowlist: a URL of an allowed host that resolves to a private address, which must be refused (repeatable)")
	f.StringSliceVar(&o.groups, "group", nil, "drill only this group's rows: "+strings.Join(drill.BwrapGroups, ", ")+" (repeatable, or comma-separated; the report names the groups left out)")
	f.StringVar(&o.udp, "udp", "", "tier allowlist: ADDR:PORT a UDP datagram is sent to (default: the --internet-url host, port 123)")
	return cmd
}

// drillOptionUsage is the hint and message of each malformed drill option.
var drillOptionUsage = map[string][2]string{
	drill.OptionInternetURL: {"for example --internet-url http://example.com/", "--internet-url %q: want an http or https URL"},
	drill.OptionHostPort:    {"a TCP port, 1-65535", "--host-port %s: out of range"},
	drill.OptionLAN:         {"for example --lan 192.168.1.10:80", "--lan %q: want ADDR:PORT"},
	drill.OptionTargetURL:   {"for example --allowed-url https://github.com/", "%q: want an http or https URL"},
	drill.OptionUDP:         {"for example --udp 203.0.113.10:123 (not port 53: tier allowlist answers DNS itself)", "--udp %q: want ADDR:PORT"},
}

func runDrill(e *env, o *drillOptions) error {
	if o.backend != "" {
		if err := profiles.ValidBackend(o.backend); err != nil {
			return usagef("the backends are bwrap and vm", "--backend: %s", err)
		}
		if o.backend == profiles.BackendVM {
			if len(o.groups) > 0 {
				return usagef("drop --group: the vm drill runs whole", "--group is for the bwrap drill")
			}
			return runDrillVM(e, o)
		}
	}
	if o.expect != "" {
		if err := profiles.ValidNetwork(o.expect); err != nil {
			return usagef(tierHint(err), "--expect: %s", err)
		}
	}
	opts := drill.BwrapOptions{
		Expect: policy.Tier(o.expect), InternetURL: o.internetURL, HostPort: o.hostPort, LAN: o.lan,
		AllowedURL: o.allowedURL, RebindURLs: o.rebindURLs, UDP: o.udp, Box: o.box != "",
	}
	if err := drillOptionErr(opts.Check()); err != nil {
		return err
	}
	var err error
	opts.Groups, err = drill.SelectGroups(o.groups)
	var unknown *drill.UnknownGroupError
	if errors.As(err, &unknown) {
		return usagef("the groups are "+strings.Join(drill.BwrapGroups, ", "), "--group %q: no such drill group", unknown.Name)
	}

	s := e.session(false)
	d := &drill.Bwrap{Session: s, Options: opts, Environ: e.environ(), Resolve: drill.Resolver(s,
		func(probe []string, binds []bwrap.Mount) (*bwrap.Plan, func(), error) {
			if o.box == "" {
				return nil, func() {}, nil
			}
			if o.profile != "" || o.template != "" || o.network != "" || len(o.env) > 0 || o.backend != "" || len(o.allow) > 0 {
				return nil, nil, usagef("drop them: a box's profile, template and tier are its stamp's", "--box cannot be combined with --profile, --template, --network, --env, --allow or --backend")
			}
			return e.bwrapBoxes().DrillPlan(s, o.box, probe, binds) // the box's own launch
		},
		func(probe []string) (bwrap.Request, error) {
			return runRequest(e, &runOptions{profile: o.profile, backend: o.backend, template: o.template,
				network: o.network, env: o.env, allow: o.allow, command: probe, isolation: o.isolation})
		})}
	rep, err := d.Run()
	var userns *bwrap.UsernsError
	var allowed *drill.InternetAllowedError
	switch {
	case errors.Is(err, drill.ErrAllowlistTargets):
		return usagef("add --network allowlist, or --expect allowlist", "--allowed-url, --rebind-url and --udp are for the allowlist contract")
	case errors.As(err, &allowed):
		return usagef("give --internet-url a host the allowlist refuses (it is the 'name not allowed' probe)",
			"--internet-url %s: %s is allowed", allowed.URL, allowed.Host)
	case errors.As(err, &userns) && !userns.Box:
		return withHint(err, usernsErrHint(userns)+"\n"+landlockOptInFor("box drill"))
	case errors.As(err, new(*drill.RunnerError)):
		return withHint(err, "run 'box --check' to diagnose the sandbox")
	case err != nil:
		return err
	}
	return drillReport(e, o.json, rep.Results, rep.Scope(opts.Expect), nil, func(err error) error { return err })
}

// drillOptionErr words a malformed drill option (drill.OptionError) by its flag.
func drillOptionErr(err error) error {
	var bad *drill.OptionError
	if !errors.As(err, &bad) {
		return err
	}
	u := drillOptionUsage[bad.Option]
	return usagef(u[0], u[1], bad.Value)
}

// drillReport prints the rows (--json: a JSON array), then fails when a row failed; its
// closing line names the scope. An error of the run that still gave rows (wrapped by
// wrap, as is a failure to print) comes after the rows.
func drillReport(e *env, asJSON bool, results []drill.Result, scope string, runErr error, wrap func(error) error) error {
	var err error
	if asJSON {
		err = drill.RenderJSON(e.stdout, results)
	} else {
		err = drill.Render(e.stdout, results)
	}
	if err = cmp.Or(runErr, err); err != nil {
		return wrap(err)
	}
	if drill.Failed(results) {
		return fmt.Errorf("drill (%s): %s", scope, drill.Summary(results))
	}
	fmt.Fprintf(e.stderr, "box: drill (%s): %s\n", scope, drill.Summary(results))
	return nil
}

// whileDrilling runs the drill guarded (drill.Guarded: it cleans up on Ctrl-C and a
// closed pipe); after Ctrl-C box exits 130, as a shell's (128+SIGINT).
func whileDrilling(run func() error) error {
	if interrupted, err := drill.Guarded(run); !interrupted {
		return err
	}
	return &exitError{130}
}
