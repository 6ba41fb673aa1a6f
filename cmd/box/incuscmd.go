package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// offStack are the words of incus arguments that can move a box off the isolation
// stack: box warns, then proceeds.
var offStack = []string{"profile", "network", "device", "nic"}

func newIncusCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "incus BOX -- ARG...",
		Short:   "run incus on a box (tag-checked; {} stands for its name)",
		GroupID: groupVM,
		Long: `The escape hatch: everything box does not wrap goes to incus itself, aimed at a box.
box checks that BOX is a box (tagged user.box=1 or user.claudebox=1; never an instance
it did not mint), replaces {} in the arguments with the box's instance name, prints the
command it runs on stderr, and runs the incus client with the same INCUS_DIR and
INCUS_SOCKET. Its exit code is box's.

Arguments that touch a profile, a network, a device, a nic or a security.* key can move
the box off the isolation stack: box warns and proceeds; from there the trust boundary
is yours to keep. --project and REMOTE:{} are refused (the tag was checked here, not
there). The check covers BOX only: other instance names you write into the arguments
go to incus as they are.`,
		Example: `  box incus work -- config show {}
  box incus work -- exec {} -- bash -l            # a root shell
  box incus work -- file push ./notes.txt {}/home/dev/`,
		Args: func(cmd *cobra.Command, args []string) error {
			box, rest, ok := splitDash(cmd, args, true)
			if !ok {
				return usagef("run 'box incus --help' for usage", "incus takes a box and incus arguments: box incus BOX -- ARG...")
			}
			if bad := elsewhere(rest); bad != "" {
				return usagef("box incus aims incus at one box on this daemon's default project; for anything else, run incus yourself",
					"%q would aim incus at another project or remote, where box has not checked the tag", bad)
			}
			for _, a := range rest {
				if strings.Contains(a, "{}") {
					return nil
				}
			}
			return usagef("for example: box incus "+box+" -- config show {}",
				"the incus arguments must name the box as {}")
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

// incusArgs replaces {} with the instance name in each argument.
func incusArgs(name string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{}", name)
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
	fmt.Fprintf(e.stderr, "box: running: incus %s\n", strings.Join(q, " "))
	if hits := offStackWords(args); len(hits) > 0 {
		fmt.Fprintf(e.stderr, "box: warning: %s can move box %s off the isolation stack (profile, network, device, nic, security.*): from here the trust boundary is yours to keep\n",
			strings.Join(hits, " "), name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	// incus sees box's environment: the same INCUS_DIR and INCUS_SOCKET aim it at the
	// same daemon. Where box resolved the socket from INCUS_DIR only, say so explicitly.
	cmd.Env = os.Environ()
	if e.getenv("INCUS_SOCKET") != "" {
		cmd.Env = append(cmd.Env, "INCUS_SOCKET="+e.getenv("INCUS_SOCKET"))
	}
	if e.getenv("INCUS_DIR") != "" {
		cmd.Env = append(cmd.Env, "INCUS_DIR="+e.getenv("INCUS_DIR"))
	}
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
