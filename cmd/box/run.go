package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/shellquote"
	"github.com/heavy-duty/box/policy"
	"github.com/spf13/cobra"
)

type runOptions struct {
	profile   string
	backend   string
	template  string
	network   string
	env       []string
	allow     []string
	sshHosts  []string
	yes       bool
	dryRun    bool
	allowRoot bool
	isolation string
	devshell  string
	publish   []string
	hostPorts []string
	command   []string
}

func newRunCmd(e *env) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:     "run [flags] [-- COMMAND [ARG...]]",
		Short:   "run a command (default: the profile's) in a sandbox in the current directory",
		GroupID: groupSandbox,
		Long:    helpText("run", "{{own-netns-tiers}}", policy.TierListWhere(policy.Tier.OwnNetNS, "")),
		Example: helpText("run.example"),
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.command = args
			return runRun(e, o)
		},
	}
	// The command's own flags belong to it: stop parsing at the first argument.
	cmd.Flags().SetInterspersed(false)
	f := cmd.Flags()
	f.StringVarP(&o.profile, "profile", "p", "", "profile to run (default $BOX_PROFILE, else \"default\")")
	f.StringVar(&o.backend, "backend", "", "backend: bwrap (vm boxes are made with 'box new')")
	f.StringVarP(&o.template, "template", "t", "", "template (default: the profile's)")
	f.StringVarP(&o.network, "network", "n", "", "network tier: "+policy.TierList("or")+" (default: the profile's)")
	f.StringArrayVar(&o.allow, "allow", nil, "with --network allowlist: allow NAME, *.DOMAIN or @LIST, optionally :PORT (repeatable; adds to the profile's allow)")
	f.StringArrayVar(&o.sshHosts, "ssh-host", nil, "let the profile's ssh keys sign SSH logins to HOST or HOST:PORT only, through box's filtering ssh-agent (repeatable; adds to the profile's ssh.hosts; host key from your known_hosts; on --network allowlist, TCP to HOST's port is admitted by name only)")
	f.StringArrayVarP(&o.env, "env", "e", nil, "let the variable NAME enter (repeatable; names only, values come from your environment)")
	f.BoolVarP(&o.yes, "yes", "y", false, "skip the audit's question (the audit still prints and its rules still apply)")
	f.BoolVarP(&o.yes, "force", "f", false, "the same as -y (every verb that asks takes both)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the exact bwrap argv, the env names it would pass and the protected set; run nothing")
	f.StringVar(&o.isolation, "isolation", "", "bwrap (namespaces; the default), landlock (no namespaces: says what does NOT hold) or auto (bwrap, else landlock where bwrap cannot start) (default: the profile's isolation)")
	f.StringVar(&o.devshell, "devshell", "", "start in a Nix dev shell, evaluated on the host: alone, the working directory's flake's default; --devshell=INSTALLABLE names one (default: the profile's devshell)")
	f.Lookup("devshell").NoOptDefVal = "true"
	f.StringArrayVar(&o.publish, "publish", nil, "publish the sandbox's PORT on the host's 127.0.0.1 and ::1 (PORT or HOSTPORT:PORT; repeatable; tiers "+policy.TierListWhere(policy.Tier.OwnNetNS, "")+")")
	f.StringArrayVar(&o.hostPorts, "host-port", nil, "let the sandbox reach the host's 127.0.0.1:PORT as host.box.internal:PORT, and no other host port (repeatable; tiers "+policy.TierListWhere(policy.Tier.OwnNetNS, "")+")")
	f.BoolVar(&o.allowRoot, "allow-root", false, "run the sandbox even though box runs as root (it keeps root's ownership of files)")
	return cmd
}

func runRun(e *env, o *runOptions) error {
	s := e.session(o.yes)
	s.Recover = true // once the tree is held (launchguard.go)
	req, err := runRequest(e, o)
	if err != nil {
		return err
	}
	s.DryRun = o.dryRun
	out, err := s.Run(req)
	if err != nil || !o.dryRun {
		return exitCode(out.Code, err)
	}
	p := out.Plan
	if p.Isolation.Landlock() {
		printLandlockDryRun(e, p) // isolation.go: the mode, its rules and what does NOT hold
		return nil
	}
	printDryRun(e, out.Prepared.Args, p.Vars)
	for _, l := range p.IsolationLines() {
		fmt.Fprintln(e.stdout, l)
	}
	if p.Spec.Seccomp != nil {
		fmt.Fprintf(e.stdout, "seccomp: %s\n", p.Spec.Seccomp.Describe())
	}
	if l := p.AbstractLine(); l != "" {
		fmt.Fprintln(e.stdout, l)
	}
	fmt.Fprintln(e.stdout, p.SocketsLine())
	fmt.Fprintln(e.stdout, p.PortsLine())
	fmt.Fprintln(e.stdout, p.LimitsLine())
	p.Protect.Render(e.stdout)
	for _, f := range p.Findings {
		fmt.Fprintf(e.stderr, "box: warning: %s: %s\n", f.Name, f.Reason)
	}
	return nil
}

// session is a bwrap session (bwrap.Session) on e's streams and environment; yes skips
// its question.
func (e *env) session(yes bool) *bwrap.Session {
	return &bwrap.Session{
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, StdinTTY: e.stdinTTY, Yes: yes,
		Outside: e.outside(), InternetHelper: e.getenv("BOX_INTERNET_HELPER"), Quiet: e.quiet,
	}
}

// exitCode is a session's end as box's error: the sandboxed command's code passes on.
func exitCode(code int, err error) error {
	if err != nil {
		return err
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// runRequest makes the resolver's request of the options (bwrap.NewRequest) and words
// its refusals by flag name.
func runRequest(e *env, o *runOptions) (bwrap.Request, error) {
	req, err := bwrap.NewRequest(e.configHome(), bwrap.RunSettings{
		Profile: profileName(e, o.profile), Template: o.template, Backend: o.backend,
		Request: bwrap.Request{
			Network: o.network, Env: o.env, Command: o.command, AllowRoot: o.allowRoot, Allow: o.allow,
			Isolation: o.isolation, DevShell: o.devshell, SSHHosts: o.sshHosts,
		},
	})
	if err != nil {
		return req, runRequestErr(err)
	}
	req.Publish, req.HostPorts, err = portFlags(o.publish, o.hostPorts)
	return req, err
}

// outside is what the bwrap resolver is told of the operator's session.
func (e *env) outside() bwrap.Outside { return bwrap.OutsideOf(e.getenv, e.environ()) }

func printDryRun(e *env, args []string, vars []envaudit.Var) {
	fmt.Fprint(e.stdout, "bwrap")
	for _, l := range bwrap.ArgvLines(args) {
		fmt.Fprintf(e.stdout, " \\\n  %s", l)
	}
	fmt.Fprintf(e.stdout, "\nenv: %s\n", strings.Join(envaudit.Names(vars), " "))
}

// shellQuote quotes a word for a POSIX shell (incuscmd.go prints a command line).
var shellQuote = shellquote.Quote

// portFlags reads --publish and --host-port (policy.ParsePorts), worded by flag.
func portFlags(publish, hostPorts []string) ([]policy.PortMap, []uint16, error) {
	pub, hp, err := policy.ParsePorts(publish, hostPorts)
	var pe *policy.PortListError
	switch {
	case !errors.As(err, &pe):
		return pub, hp, err
	case pe.Publish:
		return nil, nil, usagef("for example --publish 3000, or --publish 8080:3000 (host:sandbox)", "--publish: %s", pe.Err)
	}
	return nil, nil, usagef("for example --host-port 5432 (the host's 127.0.0.1:5432, reached inside as host.box.internal:5432)", "--host-port: %s", pe.Err)
}
