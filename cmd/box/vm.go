package main

// Shared plumbing of the box verbs: the Incus client, errors with hints, the y/N
// question, completion of box names, and the builders of the commands (vmVerb, onBox).

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/profiles"
	"github.com/spf13/cobra"
)

// groupVM is the help group of the vm verbs.
const groupVM = "vm"

// daemon is the incusd the vm verbs act on: the local socket, or the remote in force
// (remote.go). Nothing is dialled until a verb asks.
func (e *env) daemon() vm.Daemon {
	return vm.Daemon{Remote: e.remoteName(), Target: e.target, Socket: e.localSocket(),
		Getenv: e.getenv, Home: e.home(), Local: host.LocalClientOf(e.localSocket())}
}

// vmBackend is the vm backend (vm.Backend, which implements backend.Backend) talking
// and writing where this env does; a verb's context is cancelled by Ctrl-C and SIGTERM
// (operations in flight are cancelled in incusd too).
func (e *env) vmBackend() vm.Backend {
	return vm.Backend{
		Client: e.daemon().Client, Context: vm.SignalContext,
		Getenv: e.getenv, Socket: e.localSocket(), ConfigHome: e.configHome(),
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, Quiet: e.quiet,
		Err:        func(err error) error { return vmErr(e, err) },
		Ask:        func(force bool, question, refused string) error { return ask(e, force, question, refused) },
		Warn:       func(w error) { warnf(e, w) },
		VMExpected: func() bool { return vmExpected(e) },
	}
}

// warnf says a backend's warning, and its hint (hints.go), on stderr, --quiet or not: a
// warning is about the box's isolation.
func warnf(e *env, w error) {
	fmt.Fprintf(e.stderr, "box: warning: %s\n", termSafe(w.Error()))
	if h, _ := hintFor(w); h != "" {
		// One "box: hint:" a line, as an error's (field review, session 16: box new's
		// unstartable warning left its hint's second and third lines bare).
		for _, line := range strings.Split(h, "\n") {
			fmt.Fprintf(e.stderr, "box: hint: %s\n", termSafe(line))
		}
	}
}

// vmErr gives an error from the vm backend its hint: names are usage errors, a missing
// daemon says how to find out why, the tag boundary explains itself.
func vmErr(e *env, err error) error {
	if err == nil {
		return nil
	}
	err = cliHint(err) // hints.go: a typed error's hint is the one it keeps
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		var u *vm.UsageError
		if errors.As(err, &u) {
			return usagef("", "%w", err)
		}
		return err
	}
	if r := e.remoteName(); vm.Untrusted(err) && r != "" {
		return withHint(err, fmt.Sprintf("remote %s does not trust this client certificate: add it on the server ('incus config trust add-certificate client.crt'), or re-add the remote with a trust token ('incus remote add %s TOKEN')", r, r))
	}
	if h := e.userSocketHint(err); h != "" {
		return withHint(err, h) // usersocket.go
	}
	if vm.NoIncus(err) {
		if absent := incusAbsent(e); absent != nil {
			return absent // one line: not installed or not running, and what to do
		}
	}
	switch vm.FailureOf(err) {
	case vm.Unreached:
		return withHint(err, fmt.Sprintf("is incusd running? 'box doctor' checks the host; INCUS_SOCKET or INCUS_DIR choose the socket (now %s)", e.localSocket()))
	case vm.Denied:
		return withHint(err, "your user may not use incusd's socket: run as root or as a member of the incus-admin group")
	case vm.Interrupted:
		return errors.New("interrupted")
	}
	var bad *backend.NameError
	if errors.As(err, &bad) {
		return usagef("box names are letters, digits and hyphens, starting with a letter", "%w", err)
	}
	return err
}

// note prints a verb's closing line on stderr, unless --quiet.
func note(e *env, format string, a ...any) {
	if !e.quiet {
		fmt.Fprintf(e.stderr, "box: "+format+"\n", a...)
	}
}

// ask puts a y/N question on a terminal. Without a terminal and without --force it
// refuses: nobody can answer.
func ask(e *env, force bool, question, refused string) error {
	if force {
		return nil
	}
	if !e.stdinTTY() {
		return usagef("re-run with --force to go ahead without asking", "%s: no terminal to ask on", refused)
	}
	fmt.Fprintf(e.stderr, "box: %s [y/N] ", question)
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil {
		fmt.Fprintln(e.stderr) // Ctrl-D echoes no newline (as box run's question)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return withHint(errors.New(refused), "answer y to go ahead, or pass --force")
}

// boxArg checks that a verb got exactly the box names it takes.
func boxArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("run 'box "+cmd.Name()+" --help' for usage", "%s takes %s, got %d argument(s)", cmd.Name(), names, len(args))
		}
		return nil
	}
}

// completeBoxes completes the first argument with the names of the boxes (a short
// deadline: a missing daemon completes nothing).
func completeBoxes(e *env) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return boxNames(e, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func boxNames(e *env, prefix string) []cobra.Completion {
	var out []cobra.Completion
	if bw, err := e.boxStore().List(); err == nil {
		for _, b := range bw {
			if strings.HasPrefix(b.Name, prefix) {
				out = append(out, cobra.CompletionWithDesc(b.Name, "bwrap"))
			}
		}
	}
	for _, c := range e.daemon().Completions(prefix) {
		out = append(out, cobra.CompletionWithDesc(c.Name, c.Status))
	}
	return out
}

// stamp formats a time for tables.
func stampTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// dash prints "-" for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// splitDash splits "BOX -- ARG..." (flags stop at BOX, so "--" may come through as an
// argument) into the box and the rest. ok is false when there is no box or no rest.
func splitDash(cmd *cobra.Command, args []string, needDash bool) (box string, rest []string, ok bool) {
	if len(args) == 0 {
		return "", nil, false
	}
	box, rest = args[0], args[1:]
	switch dash := cmd.ArgsLenAtDash(); {
	case dash == 1:
	case dash == -1 && len(rest) > 0 && rest[0] == "--":
		rest = rest[1:]
	case dash == -1 && !needDash:
	default:
		return "", nil, false
	}
	return box, rest, len(rest) > 0
}

// vmVerb is a box verb of the vm group named by use's first word: its help from
// help/NAME.txt, box names completed.
func vmVerb(e *env, use, short string, args cobra.PositionalArgs, run func(*cobra.Command, []string) error) *cobra.Command {
	name, _, _ := strings.Cut(use, " ")
	return &cobra.Command{Use: use, Short: short, GroupID: groupVM, Long: helpText(name), Example: helpText(name + ".example"),
		Args: args, ValidArgsFunction: completeBoxes(e), RunE: run}
}

// onBox runs a verb's call on the backend that holds the box name.
func onBox(e *env, name string, call func(backend.Backend) error) error {
	be, err := e.lookup().For(name, true) // the vm backend asked first whether it has the name
	if err != nil {
		return err
	}
	return call(be)
}

// argRange checks that a verb got min to max arguments; what says what it takes.
func argRange(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return usagef("run 'box "+cmd.Name()+" --help' for usage", "%s", what)
		}
		return nil
	}
}

// vmUser is who runs box, as vmExpected asks it (a test's stand-in).
var vmUser = struct {
	uid    func() int
	groups func() []string // the names of the process's groups
}{os.Getuid, groupNames}

// groupNames are the names of this process's groups (a group the database does not name
// is left out).
func groupNames() []string {
	gids, _ := os.Getgroups()
	gids = append(gids, os.Getgid())
	var out []string
	for _, g := range gids {
		if gr, err := user.LookupGroupId(strconv.Itoa(g)); err == nil {
			out = append(out, gr.Name)
		}
	}
	return out
}

// vmExpected: this user could have vm boxes on this machine, so a list without incusd
// must say it lists none of them: root, a member of incus-admin (incusd's socket) or
// incus (incus-user's), or one of the user's profiles names the vm backend. Anyone else
// has no way to incusd here, and was warned at every box list on a machine whose Incus
// is installed but stopped (field review, session 21: a bwrap-only user, a CI runner's
// incusd).
func vmExpected(e *env) bool {
	if vmUser.uid() == 0 {
		return true
	}
	for _, g := range vmUser.groups() {
		if g == "incus-admin" || g == "incus" {
			return true
		}
	}
	ps, _ := profiles.List(profiles.Dir(e.configHome())) // a broken one is box profiles' to name
	for _, p := range ps {
		if p.Backend == "vm" && p.Source != "built-in" {
			return true
		}
	}
	return false
}
