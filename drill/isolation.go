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
}{
	// The secrets' names are visible (the home is the host's, unreadable); a content
	// that is readable stays a BREACH.
	{"secret:", "a home of its own: the home is the host's, its entries' names visible and their contents unreadable", namesOnly},
	{"pids", "no pid namespace: your other processes are visible in /proc", nil},
	{"trust:wider-run", "only tier none in the Landlock mode: there is no wider run to compare", nil},
	{"protect:", "read-only binds inside the working directory need a mount namespace; the post-run audit still moves aside what executes", nil},
	{"limits:tmpfs:", "no private /tmp, /var/tmp or /dev/shm (they need a mount namespace); the system's are not writable, TMPDIR is the instance directory's", nil},
	{"limits:cgroup", "no cgroup: rlimits only", nil},
	{"limits:pids", "no cgroup: RLIMIT_NPROC counts all your processes", nil},
	{"limits:memory", "no cgroup: RLIMIT_AS bounds each process's address space, not the sandbox's memory", nil},
	{"net:unix-path", "named unix sockets are not mediated (Landlock does not govern connect on a socket's path)", nil},
	{"nix:daemon", "named unix sockets are not mediated: the host's nix-daemon answers, and builds and fetches on the host's network, outside tier none", nil},
	{"socket:", "named unix sockets are not mediated (Landlock does not govern connect on a socket's path)", nil},
	{"net:abstract", "abstract unix sockets are scoped only from Landlock ABI 6 (Linux 6.12)", nil},
	{"kernel:terminal", "the command shares box's terminal: no terminal of its own", nil},
	{"kernel:host-tty", "the command shares box's terminal: no terminal of its own", nil},
	{"proc:", "no private /proc: your other processes, their command lines and environments are readable", nil},
	{"env:proc", "no private /proc: your other processes' environments are readable", nil},
	{"kernel:trace-init", "no pid namespace: the sandbox's first process is not an init of its own", nil},
}

// IsolationVerdicts turns the rows the plan's mode does not hold from BREACH or FAIL into
// NOT HELD, with the reason; in the bwrap mode it changes nothing.
func IsolationVerdicts(p *bwrap.Plan, rs []Result) []Result {
	if p == nil || !p.Isolation.Landlock() {
		return rs
	}
	for i, r := range rs {
		if r.Status != Breach && r.Status != Fail && r.Status != Error {
			continue
		}
		for _, n := range landlockNotHeld {
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
