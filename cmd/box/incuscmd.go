package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend/vm"
	"github.com/spf13/cobra"
)

// offStack are the words of incus arguments that can move a box off the isolation
// stack: box warns, then proceeds.
var offStack = []string{"profile", "network", "device", "nic"}

func newIncusCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "incus BOX -- ARG...",
		Short:   "run incus on a box (tag-checked; {} stands for its name, else it is appended)",
		GroupID: groupVM,
		Long: `The escape hatch: everything box does not wrap goes to incus itself, aimed at a box.
box checks that BOX is a box (tagged user.box=1 or user.claudebox=1; never an instance
it did not mint), replaces {} in the arguments with the box's instance name (with no {},
the name is appended at the end), prints the command it runs on stderr, and runs the
incus client pinned to the daemon and project box checked: a configuration of its own
(INCUS_CONF) whose only remote is box's socket (or, with --remote R or BOX R:NAME, that
remote: its address, project, client certificate and accepted server certificate),
INCUS_REMOTE and INCUS_PROJECT set, so 'incus remote switch', 'incus project switch' and
$INCUS_PROJECT do not move it elsewhere (your incus aliases do not apply either). Its
exit code is box's.

Arguments that touch a profile, a network, a device, a nic or a security.* key can move
the box off the isolation stack: box warns and proceeds; from there the trust boundary
is yours to keep. --project and REMOTE:{} in the arguments are refused (the tag was checked here, not
there). The check covers BOX only: other instance names you write into the arguments
go to incus as they are.`,
		Example: `  box incus work -- config show                  # incus config show work
  box incus work -- exec {} -- bash -l            # a root shell
  box incus work -- file push ./notes.txt {}/home/dev/`,
		Args: func(cmd *cobra.Command, args []string) error {
			_, rest, ok := splitDash(cmd, args, true)
			if !ok {
				return usagef("run 'box incus --help' for usage", "incus takes a box and incus arguments: box incus BOX -- ARG...")
			}
			if bad := elsewhere(rest); bad != "" {
				return usagef("box incus aims incus at one box on this daemon's default project; for anything else, run incus yourself",
					"%q would aim incus at another project or remote, where box has not checked the tag", bad)
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			box, rest, _ := splitDash(cmd, args, true)
			if b, err := bwrapBox(e, box); err != nil || b != nil {
				return firstErr(err, func() error {
					return usagef("box shell, box exec, box snapshot... work on it", "box %s is a bwrap box: box incus is for vm boxes", box)
				})
			}
			return runIncus(e, box, rest)
		},
	}
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// elsewhere returns the first argument that would aim incus at another project or
// remote, where the same name may be an instance box never minted: "" if none.
func elsewhere(args []string) string {
	for _, a := range args {
		if a == "--project" || strings.HasPrefix(a, "--project=") || strings.Contains(a, ":{}") {
			return a
		}
	}
	return ""
}

// incusArgs replaces {} with the instance name in each argument; with no {}, the name
// is appended (as upstream's escape hatch does).
func incusArgs(name string, args []string) []string {
	out := make([]string, len(args))
	replaced := false
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{}", name)
		replaced = replaced || out[i] != a
	}
	if !replaced {
		out = append(out, name)
	}
	return out
}

// incusRemote is the one remote of the incus configuration box runs incus with.
const incusRemote = "box"

// pinnedIncusConfig is that configuration: box's own socket, in the project box
// checked, as the default remote. Nothing of the user's incus configuration (default
// remote, remotes' projects) can aim the client elsewhere.
func pinnedIncusConfig(socket, project string) string {
	if project == "" {
		project = "default"
	}
	return fmt.Sprintf("default-remote: %s\nremotes:\n  %s:\n    addr: %s\n    project: %s\n    protocol: incus\n    public: false\naliases: {}\n",
		incusRemote, incusRemote, strconv.Quote("unix://"+socket), strconv.Quote(project))
}

// pinnedIncusEnv is the incus client's environment: env without the variables that
// choose a daemon, a remote, a project or a configuration, then box's pins.
func pinnedIncusEnv(env []string, confDir, socket, project string) []string {
	if project == "" {
		project = "default"
	}
	out := make([]string, 0, len(env)+5)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "INCUS_CONF", "INCUS_GLOBAL_CONF", "INCUS_REMOTE", "INCUS_PROJECT", "INCUS_SOCKET", "INCUS_DIR":
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "INCUS_CONF="+confDir, "INCUS_GLOBAL_CONF="+confDir, "INCUS_REMOTE="+incusRemote, "INCUS_PROJECT="+project)
	if socket != "" { // "" for an HTTPS remote: the configuration names its address
		out = append(out, "INCUS_SOCKET="+socket)
	}
	return out
}

// offStackWords lists the arguments that can move a box off the isolation stack.
func offStackWords(args []string) []string {
	var hits []string
	for _, a := range args {
		l := strings.ToLower(a)
		if strings.Contains(l, "security.") {
			hits = append(hits, a)
			continue
		}
		for _, w := range offStack {
			if l == w || strings.TrimLeft(l, "-") == w || strings.HasPrefix(strings.TrimLeft(l, "-"), w+"=") {
				hits = append(hits, a)
				break
			}
		}
	}
	return hits
}

func runIncus(e *env, name string, rest []string) error {
	ctx, stop := vmContext()
	c := e.client()
	_, err := resolve(ctx, e, c, name)
	c.Close()
	stop()
	if err != nil {
		return err
	}
	bin, err := exec.LookPath("incus")
	if err != nil {
		return withHint(errors.New("the incus client is not installed"), "install it (Debian 12: apt-get install -t bookworm-backports incus-client), or use the Nix package, which puts it on PATH")
	}
	args := incusArgs(name, rest)
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	fmt.Fprintf(e.stderr, "box: running: incus %s   (on %s, project %s)\n", strings.Join(q, " "), c.Where(), vm.ProjectOf(c))
	if hits := offStackWords(args); len(hits) > 0 {
		fmt.Fprintf(e.stderr, "box: warning: %s can move box %s off the isolation stack (profile, network, device, nic, security.*): from here the trust boundary is yours to keep\n",
			strings.Join(hits, " "), name)
	}
	// Pinned: the client acts on exactly the daemon and project the tag was checked on.
	confDir, err := os.MkdirTemp("", "box-incus-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(confDir)
	socket := ""
	if r := c.Remote(); r != nil {
		err = pinRemoteIncus(confDir, r) // remote.go
	} else if socket, err = filepath.Abs(c.Socket()); err == nil {
		err = os.WriteFile(filepath.Join(confDir, "config.yml"), []byte(pinnedIncusConfig(socket, c.Project)), 0o600)
	}
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	cmd.Env = pinnedIncusEnv(os.Environ(), confDir, socket, c.Project)
	// Ctrl-C reaches incus (same process group); box waits for it to finish. (Caught,
	// not ignored: an ignored signal would stay ignored in incus.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return &exitError{128 + int(ws.Signal())}
			}
			return &exitError{ee.ExitCode()}
		}
		return fmt.Errorf("run incus: %w", err)
	}
	return nil
}
