// Command box gives a coding agent, or any untrusted command, a place to work where it
// cannot reach the operator's secrets, the LAN, the host, or other boxes.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/phase"
	"github.com/heavy-duty/box/internal/termtext"
)

// version is stamped at build time (-ldflags "-X main.version=..."); otherwise it comes
// from the module's build info.
var version = ""

func boxVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// printVersion is box --version's, box -v's and box version's answer.
func printVersion(w io.Writer) { fmt.Fprintf(w, "box %s\n", boxVersion()) }

// Exit codes: 0 ok, 1 failed, 2 asked wrong. The verbs that run a command (run, exec,
// shell) pass the command's own code on and keep 125, 126 and 127 for their own ends,
// as env, docker and podman do: 125 box failed (bad flags, a refusal, a sandbox that
// could not start, a failed post-run audit: bwrap.ExitAudit), 126 the command is not
// executable, 127 it was not found.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
	exitBox   = 125
)

// runners are the verbs whose exit code is a command's: box's own failures there are
// exitBox, never a code the command could have returned.
var runners = map[string]bool{"run": true, "exec": true, "shell": true}

func main() {
	phase.Mark("main")
	gcForShortRuns()
	code := Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	phase.Mark("exit")
	os.Exit(code)
}

// gcForShortRuns collects less often than Go's default, unless GOGC or GOMEMLIMIT say
// otherwise: box lives for one verb and its heap is small, and a run in a tree of 50
// repositories spent some 7% of its time collecting (issue 24). The soft limit keeps
// a walk of a tree near the audit's bound from growing the heap fivefold.
func gcForShortRuns() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}

// Main runs box with args and returns the exit code. Everything but results goes to
// stderr, prefixed "box:".
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && strings.HasPrefix(args[0], "__") {
		if code, ok := hidden(args); ok {
			return code
		}
	}
	if len(args) == 1 && args[0] == "--version" {
		// The tree's answer (root.go's --version) without building the tree.
		printVersion(stdout)
		return exitOK
	}
	root := newRootFor(newEnv(stdin, stdout, stderr), loneVerb(args))
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	code := report(stderr, err)
	if cmd != nil && runners[cmd.Name()] && boxsOwn(err) && (code == exitFail || code == exitUsage) {
		return exitBox
	}
	return code
}

// boxsOwn reports whether err is box's own failure rather than a command's exit code.
func boxsOwn(err error) bool {
	_, cmds := commandCode(err)
	return err != nil && !cmds
}

// commandCode is the exit code of a command box ran (nothing is printed for it).
func commandCode(err error) (int, bool) {
	var ex *exitError
	var bx *backend.ExitError // box exec's, box shell's
	switch {
	case errors.As(err, &ex):
		return ex.code, true
	case errors.As(err, &bx):
		return bx.Code, true
	}
	return 0, false
}

// report prints err as "box: error: ..." with its hint, and maps it to an exit code.
func report(w io.Writer, err error) int {
	err = cliHint(err) // hints.go
	if code, ok := commandCode(err); ok || err == nil {
		return code
	}
	fmt.Fprintf(w, "box: error: %s\n", termSafe(err.Error()))
	if h := errs.HintOf(err); h != "" {
		for _, line := range strings.Split(h, "\n") {
			fmt.Fprintf(w, "box: hint: %s\n", termSafe(line))
		}
	}
	if code, ok := bwrap.ExitCode(err); ok { // an audit, a sandbox that did not start, a command not found
		return code
	}
	if errs.IsUsage(err) {
		return exitUsage
	}
	return exitFail
}

// exitError carries a sandboxed command's exit code; nothing is printed for it.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usagef and withHint are the CLI's short names for the shared error shapes.
func usagef(hint, format string, a ...any) error { return errs.Usage(hint, format, a...) }

func withHint(err error, hint string) error { return errs.WithHint(err, hint) }

// termSafe escapes the control characters in s but newline and tab: an error can quote
// a name the sandbox chose (a file in a box's home).
func termSafe(s string) string { return termtext.Escape(s, true) }
