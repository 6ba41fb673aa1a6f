package drill

// The drill in the Landlock mode (--isolation landlock): a row whose protection the mode
// does not hold is NOT HELD, with the mode's reason, instead of BREACH or FAIL. NOT HELD
// is its own verdict: not a PASS, not a SKIP (the probe ran and saw the exposure), not a
// failure of the drill (the operator chose the mode, and every launch says it), and the
// summary counts it. A row the mode should hold and does not stays a BREACH.

import (
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
)

// NotHeld: the mode in use does not give this protection, said at every launch in it.
const NotHeld Status = "NOT HELD"

// landlockNotHeld are the rows (by ID prefix) the Landlock mode does not hold, and why.
var landlockNotHeld = []struct {
	prefix, why string
	only        func(Result) bool // nil: every row with the prefix
	// unmediated: only where box cannot mediate unix sockets in the mode (a kernel
	// without seccomp user notification); where it does, these rows are judged as in
	// the bwrap mode, so a socket reached is a BREACH.
	unmediated bool
}{
	// The secrets' names are visible (the home is the host's, unreadable); a content
	// that is readable stays a BREACH.
	{"secret:", "a home of its own: the home is the host's, its entries' names visible and their contents unreadable", namesOnly, false},
	{"pids", "no pid namespace: your other processes are visible in /proc", nil, false},
	{"trust:wider-run", "only tier none in the Landlock mode: there is no wider run to compare", nil, false},
	{"protect:", "read-only binds inside the working directory need a mount namespace; the post-run audit still moves aside what executes", nil, false},
	{"limits:tmpfs:", "no private /tmp, /var/tmp or /dev/shm (they need a mount namespace); the system's are not writable, TMPDIR is the instance directory's", nil, false},
	{"limits:cgroup", "no cgroup: rlimits only", nil, false},
	{"limits:pids", "no cgroup: RLIMIT_NPROC counts all your processes", nil, false},
	{"limits:memory", "no cgroup: RLIMIT_AS bounds each process's address space, not the sandbox's memory", nil, false},
	{"net:unix-path", "named unix sockets are not mediated (Landlock does not govern connect on a socket's path)", nil, true},
	{"nix:daemon", "named unix sockets are not mediated: the host's nix-daemon answers, and builds and fetches on the host's network, outside tier none", nil, true},
	{"socket:", "named unix sockets are not mediated (Landlock does not govern connect on a socket's path)", nil, true},
	{"net:abstract", "abstract unix sockets are scoped only from Landlock ABI 6 (Linux 6.12)", nil, false},
	{"kernel:host-tty", "the command shares box's terminal: no terminal of its own", nil, false},
	{"kernel:terminal-strings", "the command shares box's terminal: its output reaches yours unfiltered", nil, false},
	{"proc:", "no private /proc: your other processes and their command lines are readable", nil, false},
	{"env:proc", "no private /proc: your other processes' environments are readable", nil, false},
	{"kernel:watch-home", "Landlock does not govern inotify or fanotify: a watch on your home gives the names of files you open, create or change there, not their contents", nil, false},
	{"kernel:trace-init", "no pid namespace: the sandbox's first process is not an init of its own", nil, false},
}

// IsolationVerdicts turns the rows the plan's mode does not hold from BREACH or FAIL into
// NOT HELD, with the reason; in the bwrap mode it changes nothing.
func IsolationVerdicts(p *bwrap.Plan, rs []Result) []Result {
	if p == nil || !p.Isolation.Landlock() {
		return rs
	}
	mediated := p.LandlockSockets().Mediate
	for i, r := range rs {
		if r.Status != Breach && r.Status != Fail && r.Status != Error {
			continue
		}
		if mediated && strings.HasPrefix(r.ID, "socket:") && r.Status == Breach && unreachable(r) {
			// No mount namespace hides the host's socket files; what the row guards,
			// connecting to them, box's mediation refuses.
			rs[i].Status = Pass
			rs[i].Observed = "the Landlock mode: visible by name, not connectable (box mediates every unix connect): " + r.Observed
			continue
		}
		for _, n := range landlockNotHeld {
			if n.unmediated && mediated {
				continue
			}
			if strings.HasPrefix(r.ID, n.prefix) && (n.only == nil || n.only(r)) {
				rs[i].Status = NotHeld
				rs[i].Observed = "the Landlock mode: " + n.why + " (seen: " + r.Observed + ")"
				break
			}
		}
	}
	return rs
}

// namesOnly: every target the row saw is visible and unreadable (probePaths's words).
func namesOnly(r Result) bool {
	for _, t := range strings.Split(r.Observed, "; ") {
		if !strings.HasSuffix(t, ": visible, unreadable") && !strings.HasSuffix(t, ": visible dir, unreadable") {
			return false
		}
	}
	return true
}

// unreachable: every target the socket row saw is a socket it could not connect to, or
// a directory it could not list (probePaths's words).
func unreachable(r Result) bool {
	for _, t := range strings.Split(r.Observed, "; ") {
		if !strings.HasSuffix(t, ": socket") && !strings.HasSuffix(t, ": visible dir, unreadable") {
			return false
		}
	}
	return true
}
