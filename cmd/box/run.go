package main

import (
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
		Long: `Run COMMAND in a bubblewrap sandbox in the current directory.

The sandbox's environment starts empty: only a small base (TERM, COLORTERM, LANG,
LANGUAGE, the locale categories LC_ALL, LC_CTYPE, ... by name, TZ, NO_COLOR), the
profile's env names and --env names enter, with HOME and PATH set to the sandbox's.
Before launch box prints every variable that enters, shortened, and flags values that
look like secrets (a base variable's value must also fit its shape: a TZ holding a URL
is flagged); on a terminal it asks, -y skips the question.

Limits: the sandbox gets at most the profile's pids (default 4096 tasks) and memory
(default half the host's RAM), and cpu when set; /tmp, /var/tmp, /dev/shm and the home
tmpfs are sized from the memory limit. 'box --check' says what holds them here: a
cgroup of yours (v2, delegated), else rlimits (weaker).

Only the working directory is writable. Your home directory is an empty tmpfs except
~/.claude (a per-project instance directory), system directories are read-only, and
/run/user, agent sockets and docker.sock are absent unless a profile mounts them.

What your own tools would run later stays read-only inside: git hooks and config in
every repository found, .envrc, .vscode/, .mcp.json, .claude/settings.json and the rest
of the protected set (--dry-run lists it); commits, branches and rebases still work.

Network tiers: none (no network), allowlist (only the names the profile's allow key and
--allow list, through box's proxy, whatever the program; refusals are logged), internet
(public internet only), full (the host's network; only when named; the host's abstract
unix sockets stay out of reach on Linux 6.12+). Templates never choose the network.

After the command ends (however it ends), box audits every git repository under the
working directory for what the sandbox left for your own git to run: config keys that
execute (core.fsmonitor, core.hooksPath, ! aliases, filters, ...), new nested
repositories, new hooks. Each is moved aside into $XDG_DATA_HOME/box/quarantine/ (nothing
is deleted) and printed with how to restore it. The exit code stays the command's; it is
125 only when the audit could not finish, or when the sandbox could not start (box says
why: an AppArmor restriction, a container's seccomp filter, no user namespaces).

Ports (tiers none, allowlist, internet): --publish 3000 (or 8080:3000, host:sandbox)
opens the sandbox's port on the host's 127.0.0.1 and ::1 only; --host-port 5432 lets the
sandbox reach the host's 127.0.0.1:5432 as host.box.internal:5432, and no other host
port. A taken host port fails before launch; tier full refuses both (the sandbox is on
the host's network already). -p stays --profile's shorthand.

Isolation: bwrap (the default) sandboxes with namespaces. Where user namespaces cannot
be had (a container, a locked-down CI runner), --isolation landlock runs the command
with no namespace at all: Landlock keeps the home and its secrets unreadable and writes
to the working and instance directories, a socket filter and Landlock's TCP rules give
tier none; every launch prints what does NOT hold (a private /tmp and /proc, the other
tiers, read-only protected paths inside the working directory, cgroup limits, ...).
Only tier none; a profile's mounts and nix store are refused by name. A profile's
isolation = "auto" is a standing opt-in: bwrap, and the Landlock mode only where box
diagnoses that bwrap cannot start. Never chosen without one of these.`,
		Example: `  box run -y                               # the default profile: a shell, no network
  box run -y -- make test                  # one command
  box run --backend bwrap -y -- claude --dangerously-skip-permissions
  box run --profile claude -y              # the claude profile's command
  box run --env GITHUB_TOKEN --network full -y -- gh pr list
  box run -n allowlist --allow @github --allow api.anthropic.com:443 -y -- claude
  box run --publish 3000 -y -- npm run dev # the dev server at http://127.0.0.1:3000
  box run --host-port 5432 -y -- psql -h host.box.internal
  box run --dry-run -- true                # print the bwrap argv, run nothing
  box run --isolation landlock -y -- make  # no namespaces (a container): says what does not hold
  box run --devshell -y -- make            # in the project flake's dev shell (devShells.<system>.default)`,
		Args: cobra.ArbitraryArgs,
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
	f.StringArrayVar(&o.publish, "publish", nil, "publish the sandbox's PORT on the host's 127.0.0.1 and ::1 (PORT or HOSTPORT:PORT; repeatable; tiers none, allowlist, internet)")
	f.StringArrayVar(&o.hostPorts, "host-port", nil, "let the sandbox reach the host's 127.0.0.1:PORT as host.box.internal:PORT, and no other host port (repeatable; tiers none, allowlist, internet)")
	f.BoolVar(&o.allowRoot, "allow-root", false, "run the sandbox even though box runs as root (it keeps root's ownership of files)")
	return cmd
}

func runRun(e *env, o *runOptions) error {
	s := e.session(o.yes)
	if !o.dryRun {
		if err := s.RecoverAudits(); err != nil {
			return err
		}
	}
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
func (e *env) outside() bwrap.Outside {
	return bwrap.Outside{
		Home: e.home(), ConfigHome: e.configHome(), DataHome: e.dataHome(),
		User: e.userName(), Environ: e.environ(), RuntimeDir: e.runtimeDir(),
	}
}

func printDryRun(e *env, args []string, vars []envaudit.Var) {
	fmt.Fprint(e.stdout, "bwrap")
	for _, l := range bwrap.ArgvLines(args) {
		fmt.Fprintf(e.stdout, " \\\n  %s", l)
	}
	fmt.Fprintf(e.stdout, "\nenv: %s\n", strings.Join(envaudit.Names(vars), " "))
}

// shellQuote quotes a word for a POSIX shell (incuscmd.go prints a command line).
var shellQuote = shellquote.Quote

// portFlags reads --publish and --host-port.
func portFlags(publish, hostPorts []string) ([]policy.PortMap, []uint16, error) {
	var pub []policy.PortMap
	for _, s := range publish {
		m, err := policy.ParsePortMap(s)
		if err != nil {
			return nil, nil, usagef("for example --publish 3000, or --publish 8080:3000 (host:sandbox)", "--publish: %s", err)
		}
		pub = append(pub, m)
	}
	var hp []uint16
	for _, s := range hostPorts {
		n, err := policy.ParsePort(s)
		if err != nil {
			return nil, nil, usagef("for example --host-port 5432 (the host's 127.0.0.1:5432, reached inside as host.box.internal:5432)", "--host-port: %s", err)
		}
		hp = append(hp, n)
	}
	return pub, hp, nil
}
