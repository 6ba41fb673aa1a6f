package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
	"github.com/spf13/cobra"
)

type runOptions struct {
	profile   string
	backend   string
	template  string
	network   string
	env       []string
	yes       bool
	dryRun    bool
	allowRoot bool
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
LANGUAGE, LC_*, TZ, NO_COLOR), the profile's env names and --env names enter, with HOME
and PATH set to the sandbox's. Before launch box prints every variable that enters and
flags values that look like secrets; on a terminal it asks, -y skips the question.

Only the working directory is writable. Your home directory is an empty tmpfs except
~/.claude (a per-project instance directory), system directories are read-only, and
/run/user, agent sockets and docker.sock are absent unless a profile mounts them.

Network tiers: none (no network), internet (public internet only), full (the host's
network; only when named). Templates never choose the network.`,
		Example: `  box run -y                               # the default profile: a shell, no network
  box run -y -- make test                  # one command
  box run --backend bwrap -y -- claude --dangerously-skip-permissions
  box run --profile claude -y              # the claude profile's command
  box run --env GITHUB_TOKEN --network full -y -- gh pr list
  box run --dry-run -- true                # print the bwrap argv, run nothing`,
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
	f.StringVarP(&o.network, "network", "n", "", "network tier: none, internet or full (default: the profile's)")
	f.StringArrayVarP(&o.env, "env", "e", nil, "let the variable NAME enter (repeatable; names only, values come from your environment)")
	f.BoolVarP(&o.yes, "yes", "y", false, "skip the audit's question (the audit still prints and its rules still apply)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the exact bwrap argv and the env names it would pass; run nothing")
	f.BoolVar(&o.allowRoot, "allow-root", false, "run the sandbox even though box runs as root (it keeps root's ownership of files)")
	return cmd
}

// plan is everything a run needs, resolved from profile, template, flags and host.
type plan struct {
	profile   *profiles.Profile
	template  *templates.Template
	spec      bwrap.Spec
	vars      []envaudit.Var
	findings  []envaudit.Finding
	policy    bwrap.Policy
	warnings  []string
	allowRoot bool
}

func runRun(e *env, o *runOptions) error {
	p, err := resolveRun(e, o)
	if err != nil {
		return err
	}
	for _, w := range p.warnings {
		fmt.Fprintf(e.stderr, "box: warning: %s\n", w)
	}
	args, netOpts, err := prepareLaunch(e, p)
	if err != nil {
		return err
	}
	if o.dryRun {
		printDryRun(e, args, p.vars)
		if p.spec.Seccomp != nil {
			fmt.Fprintf(e.stdout, "seccomp: %s\n", p.spec.Seccomp.Describe())
		}
		for _, f := range p.findings {
			fmt.Fprintf(e.stderr, "box: warning: %s: %s\n", f.Name, f.Reason)
		}
		return nil
	}
	if err := refuseRoot(p); err != nil {
		return err
	}
	bin, err := lookBwrap()
	if err != nil {
		return err
	}

	envaudit.Report(e.stderr, p.vars, p.findings)
	if err := confirm(e, o.yes); err != nil {
		return err
	}
	code, err := launchSandbox(p, bin, args, netOpts, e.stdin, e.stdout, e.stderr)
	if err != nil {
		return err
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

// prepareLaunch makes a resolved plan ready to launch: the network tier's helper (which
// decides the sandbox's resolv.conf) and bwrap's argv. It starts nothing. box run and
// box drill share it, so the drill probes exactly the sandbox box run builds.
func prepareLaunch(e *env, p *plan) ([]string, inet.Options, error) {
	var netOpts inet.Options
	host, err := bwrap.DetectHost()
	if err != nil {
		return nil, netOpts, err
	}
	p.spec.InfoFD = bwrap.InfoFD
	p.spec.SeccompFD = bwrap.SeccompFD
	if p.spec.Network == bwrap.NetInternet {
		// The helper decides the resolver address, which the sandbox's resolv.conf
		// (a bind, fixed before launch) must name.
		helper := inet.Helper(e.getenv("BOX_INTERNET_HELPER"))
		if helper != inet.Auto && helper != inet.Pasta && helper != inet.Slirp4netns {
			return nil, netOpts, usagef("unset it to let box choose (pasta, else slirp4netns)", "BOX_INTERNET_HELPER=%q: want pasta or slirp4netns", helper)
		}
		if netOpts, err = (inet.Options{Helper: helper}).Resolve(); err != nil {
			return nil, netOpts, withHint(err, "install passt (pasta) or slirp4netns, then run 'box --check'")
		}
		if netOpts.HostAddrs, err = inet.HostAddrs(); err != nil {
			return nil, netOpts, fmt.Errorf("internet tier: listing the host's addresses: %w", err)
		}
		p.spec.BlockFD = bwrap.BlockFD
		p.spec.ResolvConf = filepath.Join(p.spec.InstanceDir, "resolv.conf")
	}
	args, err := bwrap.Args(p.spec, host)
	return args, netOpts, err
}

// refuseRoot: user namespaces do not take root's file ownership away, so as root the
// command could read root-only files (/etc/shadow, host keys) in the read-only binds.
// Only --allow-root accepts that.
func refuseRoot(p *plan) error {
	if os.Geteuid() == 0 && !p.allowRoot {
		return withHint(errors.New("refusing to sandbox as root: inside, the command would keep root's ownership of files (/etc/shadow, SSH host keys and other root-only files would be readable)"),
			"run box as an unprivileged user (for example: su - USER), or pass --allow-root to accept that exposure")
	}
	return nil
}

func lookBwrap() (string, error) {
	bin, err := exec.LookPath("bwrap")
	if err != nil {
		return "", withHint(errors.New("bwrap (bubblewrap) is not installed"), "install it: apt-get install bubblewrap (then run 'box --check')")
	}
	return bin, nil
}

// launchSandbox prepares the instance directory, runs bwrap with args (attaching the
// internet tier before the command is released) and returns the command's exit code.
func launchSandbox(p *plan, bin string, args []string, netOpts inet.Options, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if err := refuseRoot(p); err != nil {
		return 1, err
	}
	if err := bwrap.PrepareInstance(p.spec.InstanceDir, p.policy); err != nil {
		return 1, fmt.Errorf("prepare instance directory %s: %w", p.spec.InstanceDir, err)
	}
	launch := bwrap.Launch{
		Bwrap: bin, Args: args, Env: envaudit.Environ(p.vars),
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
	}
	if p.spec.Seccomp != nil {
		prog, err := p.spec.Seccomp.Bytes()
		if err != nil {
			return 1, err
		}
		launch.Seccomp = prog
	}
	if p.spec.Network == bwrap.NetInternet {
		if err := os.WriteFile(p.spec.ResolvConf, []byte(inet.ResolvConf(netOpts.Helper)), 0o644); err != nil {
			return 1, fmt.Errorf("internet tier: %w", err)
		}
		// The command waits behind bwrap's block fd until networking and the egress
		// filter are in place; if they cannot be, it never runs.
		launch.BeforeRelease = func(pid int) (func(), error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := inet.Attach(ctx, pid, netOpts)
			if err != nil {
				return nil, withHint(fmt.Errorf("internet tier: %w", err), "run 'box --check' to see what the internet tier needs here")
			}
			return func() { s.Close() }, nil
		}
	}
	code, err := bwrap.Run(launch)
	if err != nil {
		var h interface{ Hint() string }
		if errors.As(err, &h) {
			return code, err
		}
		return code, withHint(err, "run 'box --check' to diagnose the sandbox")
	}
	return code, nil
}

// resolveRun turns options, profile, template and the environment into a plan. It reads
// files (profile, template, tools on PATH) but starts nothing.
func resolveRun(e *env, o *runOptions) (*plan, error) {
	name := o.profile
	if name == "" {
		name = e.getenv("BOX_PROFILE")
	}
	if name == "" {
		name = profiles.Default
	}
	prof, err := profiles.Load(name, profiles.Dir(e.configHome()))
	if err != nil {
		if errors.Is(err, profiles.ErrNotFound) || profiles.ValidName(name) != nil {
			return nil, usagef("run 'box profiles' to list them", "%s", err)
		}
		return nil, err
	}
	backend := prof.Backend
	if o.backend != "" {
		if err := profiles.ValidBackend(o.backend); err != nil {
			return nil, usagef("the backends are bwrap (box run) and vm (box new)", "--backend: %s", err)
		}
		backend = o.backend
	}
	if backend != profiles.BackendBwrap {
		who := fmt.Sprintf("profile %q asks for", prof.Name)
		if o.backend != "" {
			who = "--backend names"
		}
		return nil, usagef("box run sandboxes a command with bwrap; vm boxes are made and entered with 'box new' and 'box shell'",
			"box run is the bwrap backend; %s backend %q", who, backend)
	}
	tmplName := prof.Template
	if o.template != "" {
		tmplName = o.template
	}
	tmpl, err := templates.Load(tmplName, templates.Dir(e.configHome()))
	if err != nil {
		if errors.Is(err, templates.ErrNotFound) || templates.ValidName(tmplName) != nil {
			return nil, usagef("run 'box templates' to list them", "%s", err)
		}
		return nil, err
	}
	network := prof.Network
	if o.network != "" {
		if err := profiles.ValidNetwork(o.network); err != nil {
			return nil, usagef("the tiers are none, internet and full: run 'box run --help'", "--network: %s", err)
		}
		network = o.network
	}

	pl := &plan{profile: prof, template: tmpl, allowRoot: o.allowRoot}
	if os.Geteuid() == 0 && o.allowRoot {
		pl.warnings = append(pl.warnings, "running as root (--allow-root): files only root may read are readable in the sandbox")
	}

	home := e.home()
	if home == "" {
		return nil, errors.New("cannot tell your home directory: set HOME")
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	// The real path: a symlink must not smuggle a bigger tree in under a harmless name.
	if wd, err = filepath.EvalSymlinks(wd); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	realHome := resolved(home)
	if err := checkWorkdir(e, wd, realHome); err != nil {
		return nil, err
	}
	instanceDir := bwrap.InstanceDir(e.dataHome(), wd)
	command := o.command
	if len(command) == 0 {
		command = prof.Command
	}
	if len(command) == 0 {
		command = tmpl.Command
	}
	if len(command) == 0 {
		command = []string{"sh"}
	}

	// Tools: the template's and the profile's, and the command itself when it is a
	// name. A missing tool is a warning; a missing command is an error.
	pathEnv := e.getenv("PATH")
	var tools []bwrap.Tool
	seen := map[string]bool{}
	want := append(append([]string{}, tmpl.Tools...), prof.Tools...)
	if !strings.Contains(command[0], "/") {
		want = append(want, command[0])
	}
	for _, name := range want {
		if seen[name] {
			continue
		}
		seen[name] = true
		t, err := bwrap.ResolveTool(name, pathEnv)
		if err == nil && (within(t.Path, wd) || within(t.Path, instanceDir)) {
			// A PATH entry the sandbox can write (a project's bin/ added by direnv)
			// could hold a planted link to anything: never bind through it.
			err = fmt.Errorf("%s resolves to %s, inside a directory the sandbox can write", name, t.Path)
		}
		if err != nil {
			if name == command[0] {
				if errors.Is(err, exec.ErrNotFound) {
					return nil, withHint(fmt.Errorf("command %q not found on your PATH", name),
						"install it, or name another command after --")
				}
				return nil, withHint(err, "run a command installed outside the working directory, or give its path inside the sandbox (./bin/...)")
			}
			if errors.Is(err, exec.ErrNotFound) {
				pl.warnings = append(pl.warnings, fmt.Sprintf("tool %q is not on your PATH; it will be missing in the sandbox", name))
			} else {
				pl.warnings = append(pl.warnings, fmt.Sprintf("tool %s; not linked into the sandbox", err))
			}
			continue
		}
		tools = append(tools, t)
	}

	var mounts []bwrap.Mount
	for _, m := range prof.Mounts {
		src, dst := expandHome(m.Path, home), expandHome(m.Target, home)
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return nil, withHint(fmt.Errorf("profile %q mounts %s: %w", prof.Name, src, err), "create it, or remove the mount from the profile")
		}
		// bwrap would follow a symlink; box binds what it resolved and judges that. A
		// link inside a directory the sandbox can write may have been planted there.
		if real != src && (within(src, wd) || within(src, instanceDir)) {
			return nil, withHint(fmt.Errorf("profile %q mounts %s, a symlink (to %s) inside a directory the sandbox can write", prof.Name, src, real),
				"mount the target itself, or remove the link")
		}
		if m.RW() {
			if err := refuseBoxDirs(e, real, "a read-write mount"); err != nil {
				return nil, err
			}
		}
		mounts = append(mounts, bwrap.Mount{Src: real, Dst: dst, RW: m.RW()})
		if w := secretPath(real, realHome); w != "" {
			pl.warnings = append(pl.warnings, fmt.Sprintf("profile %q mounts %s, which holds %s", prof.Name, real, w))
		}
	}

	var auth []string
	if prof.AuthPassthrough {
		for _, f := range []string{filepath.Join(home, ".claude", ".credentials.json")} {
			if _, err := os.Stat(f); err == nil {
				auth = append(auth, f)
			}
		}
		if len(auth) == 0 {
			pl.warnings = append(pl.warnings, "auth passthrough: no host login found (~/.claude/.credentials.json); log in inside the sandbox")
		}
	}

	var allow envaudit.Allowlist
	allow.Add("base", envaudit.Base...)
	allow.Add("profile", prof.Env...)
	for _, n := range o.env {
		if err := profiles.ValidEnvName(n); err != nil {
			return nil, usagef("--env takes a name; the value comes from your environment", "--env: %s", err)
		}
		allow.Add("--env", n)
		if !strings.HasSuffix(n, "*") && e.getenv(n) == "" {
			pl.warnings = append(pl.warnings, fmt.Sprintf("--env %s: not set in your environment", n))
		}
	}
	set := map[string]string{
		"HOME": home, "PATH": bwrap.PATH(), "BOX_SANDBOX": "bwrap",
		// Claude Code keeps .claude.json in here instead of $HOME (see bwrap.Args).
		"CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"),
	}
	uname := e.userName()
	set["USER"], set["LOGNAME"] = uname, uname
	pl.vars = allow.Filter(e.environ(), set)
	pl.findings = envaudit.Audit(pl.vars)

	toolNames := make([]string, len(tools))
	for i, t := range tools {
		toolNames[i] = t.Name
	}
	pl.policy = bwrap.Policy{
		Profile: prof.Name, Template: tmpl.Name, Network: network, Workdir: wd,
		Tools: toolNames, Auth: len(auth) > 0, Notes: tmpl.Notes,
	}
	for _, m := range mounts {
		if m.RW {
			pl.policy.Writable = append(pl.policy.Writable, m.Dst)
		} else {
			pl.policy.ReadOnly = append(pl.policy.ReadOnly, m.Dst)
		}
	}
	filter, err := seccomp.New(prof.Syscalls)
	if err != nil {
		return nil, withHint(fmt.Errorf("profile %q: %w", prof.Name, err), (&seccomp.OptInError{}).Hint())
	}
	if len(filter.OptIn) > 0 {
		pl.warnings = append(pl.warnings, fmt.Sprintf("profile %q turns off the syscall filter's %s group(s): the sandbox may use them", prof.Name, strings.Join(filter.OptIn, ", ")))
	}
	pl.spec = bwrap.Spec{
		Workdir: wd, Home: home, InstanceDir: instanceDir,
		Network: network, Mounts: mounts, AuthFiles: auth, Tools: tools,
		Command: command, Hostname: "box", Seccomp: &filter,
	}
	return pl, nil
}

func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return filepath.Clean(p)
}

// resolved is p with symlinks followed, or p itself when it cannot be resolved.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// checkWorkdir refuses a working directory whose read-write bind would expose too much:
// a home directory (as $HOME says and as the password database says: $HOME can be
// overridden), a system directory, a secret directory, or box's own configuration.
func checkWorkdir(e *env, wd, home string) error {
	homes := []string{home}
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		homes = append(homes, resolved(u.HomeDir))
	}
	for _, h := range homes {
		if err := bwrap.CheckWorkdir(wd, h); err != nil {
			return err
		}
		if w := secretPath(wd, h); w != "" {
			return &bwrap.WorkdirError{Dir: wd, Why: "it holds " + w}
		}
	}
	return refuseBoxDirs(e, wd, "the working directory")
}

// refuseBoxDirs refuses a writable path that holds (or lies in) box's own configuration
// or data: from inside, the sandbox could rewrite the policy of its next run.
func refuseBoxDirs(e *env, p, what string) error {
	for _, d := range []string{filepath.Join(e.configHome(), "box"), filepath.Join(e.dataHome(), "box")} {
		d = resolved(d)
		if within(d, p) || within(p, d) {
			hint := "run box from a project directory that does not contain " + d
			if what != "the working directory" {
				hint = "mount it read-only, or mount a directory that does not contain " + d
			}
			return withHint(fmt.Errorf("refusing %s %s: it holds box's own files (%s), which the sandbox could rewrite for its next run", what, p, d), hint)
		}
	}
	return nil
}

// secretPaths are well-known secret locations under a home directory, and what they hold.
var secretPaths = [][2]string{
	{".ssh", "SSH keys"}, {".gnupg", "GPG keys"}, {".aws", "AWS credentials"}, {".config/gcloud", "Google Cloud credentials"},
	{".kube", "Kubernetes credentials"}, {".docker", "Docker credentials"}, {".netrc", "netrc passwords"},
	{".git-credentials", "git credentials"}, {".config/gh", "GitHub CLI tokens"}, {".age", "age keys"},
	{".config/sops/age", "age keys"}, {".password-store", "passwords"}, {".local/share/keyrings", "keyrings"},
}

// secretPath names what a mounted path exposes when it is (or holds) a well-known secret
// location; "" otherwise. Mounting one is the profile's choice; box says so out loud.
func secretPath(p, home string) string {
	// In a fixed order, so the same path always gets the same answer.
	for _, sp := range secretPaths {
		rel, what := sp[0], sp[1]
		s := filepath.Join(home, rel)
		if p == s || strings.HasPrefix(p, s+"/") || strings.HasPrefix(s, p+"/") || p == home {
			return what
		}
	}
	if strings.HasSuffix(p, ".sock") || strings.HasPrefix(p, "/run/user/") {
		return "a socket to a host service"
	}
	return ""
}

// confirm asks y/N on a terminal; without one, and without -y, it refuses.
func confirm(e *env, yes bool) error {
	if yes {
		return nil
	}
	if !e.stdinTTY() {
		return withHint(errors.New("refusing to launch: no terminal to confirm the environment above"),
			"review the list above and re-run with -y to launch without asking")
	}
	fmt.Fprint(e.stderr, "box: launch the sandbox with this environment? [y/N] ")
	line, _ := bufio.NewReader(e.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return withHint(errors.New("not launched"), "answer y to launch, or pass -y")
}

func printDryRun(e *env, args []string, vars []envaudit.Var) {
	fmt.Fprint(e.stdout, "bwrap")
	for i := 0; i < len(args); {
		n := 1 + bwrapArity[args[i]]
		if args[i] == "--" {
			n = len(args) - i
		}
		n = min(n, len(args)-i)
		q := make([]string, n)
		for j := range q {
			q[j] = shellQuote(args[i+j])
		}
		fmt.Fprintf(e.stdout, " \\\n  %s", strings.Join(q, " "))
		i += n
	}
	fmt.Fprintf(e.stdout, "\nenv: %s\n", strings.Join(envaudit.Names(vars), " "))
}

// bwrapArity is how many operands a bwrap option takes, to print one option a line.
var bwrapArity = map[string]int{
	"--bind": 2, "--ro-bind": 2, "--dev-bind": 2, "--bind-try": 2, "--ro-bind-try": 2, "--symlink": 2, "--setenv": 2,
	"--cap-drop": 1, "--cap-add": 1, "--hostname": 1, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--dir": 1,
	"--chdir": 1, "--info-fd": 1, "--block-fd": 1, "--seccomp": 1, "--remount-ro": 1, "--uid": 1, "--gid": 1,
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '/' || r == '.' || r == ':' || r == ',' || r == '=' || r == '+' || r == '@' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
