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
var landlockNotHeld = []struct{ prefix, why string }{
	{"protect:", "read-only binds inside the working directory need a mount namespace; the post-run audit still moves aside what executes"},
	{"limits:tmpfs:", "no private /tmp, /var/tmp or /dev/shm (they need a mount namespace); the system's are not writable, TMPDIR is the instance directory's"},
	{"limits:cgroup", "no cgroup: rlimits only"},
	{"limits:pids", "no cgroup: RLIMIT_NPROC counts all your processes"},
	{"limits:memory", "no cgroup: RLIMIT_AS bounds each process's address space, not the sandbox's memory"},
	{"net:unix-path", "named unix sockets are not mediated (Landlock does not govern connect on a socket's path)"},
	{"socket:", "named unix sockets are not mediated (Landlock does not govern connect on a socket's path)"},
	{"net:abstract", "abstract unix sockets are scoped only from Landlock ABI 6 (Linux 6.12)"},
	{"kernel:terminal", "the command shares box's terminal: no terminal of its own"},
	{"kernel:host-tty", "the command shares box's terminal: no terminal of its own"},
	{"proc:", "no private /proc: your other processes, their command lines and environments are readable"},
	{"env:proc", "no private /proc: your other processes' environments are readable"},
	{"kernel:trace-init", "no pid namespace: the sandbox's first process is not an init of its own"},
}

// IsolationVerdicts turns the rows the plan's mode does not hold from BREACH or FAIL into
// NOT HELD, with the reason; in the bwrap mode it changes nothing.
func IsolationVerdicts(p *bwrap.Plan, rs []Result) []Result {
	if p == nil || !p.Isolation.Landlock() {
		return rs
	}
	for i, r := range rs {
		if r.Status != Breach && r.Status != Fail {
			continue
		}
		for _, n := range landlockNotHeld {
			if strings.HasPrefix(r.ID, n.prefix) {
				rs[i].Status = NotHeld
				rs[i].Observed = "the Landlock mode: " + n.why + " (seen: " + r.Observed + ")"
				break
			}
		}
	}
	return rs
}
