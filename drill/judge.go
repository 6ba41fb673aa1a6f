package drill

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
)

// Observation is what the inside saw for one probe.
type Observation struct {
	ID string `json:"id"`
	// Seen: the target was visible, reachable, present or possible (for writes: the file
	// was created).
	Seen   bool   `json:"seen"`
	Detail string `json:"detail"`
	Err    string `json:"error,omitempty"`
	// OnHost (writes, set by Settle outside): the file exists on the host afterwards.
	OnHost bool `json:"on_host,omitempty"`
	// Inodes (paths): "dev:ino" of each target seen, as the inside stats it; a bind
	// shows the host file's own, so outside, OwnFiles tells the host's from a box's.
	Inodes map[string]string `json:"inodes,omitempty"`
}

// Status is a row's verdict.
type Status string

const (
	Pass   Status = "PASS"   // the contract holds
	Breach Status = "BREACH" // something the contract blocks was seen
	Fail   Status = "FAIL"   // something the contract promises does not work
	Warn   Status = "WARN"   // exposed by the operator's own choice (allowlist, tier full)
	Skip   Status = "SKIP"   // not applicable here; Observed says why
	Error  Status = "ERROR"  // the probe could not run
)

// Result is one row of the drill's report; RenderJSON prints a list of them.
type Result struct {
	ID       string   `json:"id"`
	Group    string   `json:"group"`
	Probe    string   `json:"probe"`
	Targets  []string `json:"targets"`
	Expected string   `json:"expected"`
	Observed string   `json:"observed"`
	Status   Status   `json:"status"`
}

// Judge turns the plan and the inside's observations into results, in plan order. It is
// pure. A probe without an observation is an ERROR: the drill fails closed.
func Judge(p Plan, obs []Observation) []Result {
	byID := map[string]Observation{}
	for _, o := range obs {
		byID[o.ID] = o
	}
	out := make([]Result, 0, len(p.Probes))
	for _, pr := range p.Probes {
		r := Result{ID: pr.ID, Group: pr.Group, Probe: pr.Name, Targets: pr.Targets, Expected: pr.Expected}
		o, ok := byID[pr.ID]
		switch {
		case pr.Skip != "":
			r.Status, r.Observed = Skip, pr.Skip
		case !ok:
			r.Status, r.Observed = Error, "no result from inside the sandbox"
		case o.Err != "":
			r.Status, r.Observed = Error, "error: "+o.Err
		default:
			r.Status, r.Observed = verdict(pr, o)
		}
		out = append(out, r)
	}
	return out
}

func verdict(pr Probe, o Observation) (Status, string) {
	seen, detail := o.Seen, o.Detail
	if pr.Kind == KindTerminal || pr.Kind == KindTermStrings || pr.Kind == KindTermExcl || pr.Kind == KindScreen {
		seen = o.OnHost // only the outside sees what box put back, or passed on
	}
	if pr.Kind == KindPlant && pr.AuditOnly {
		seen = o.OnHost // landing inside is allowed: the host must not run it
	}
	if pr.Kind == KindWorktreeGitdir || pr.Kind == KindWorktreeLink || pr.Kind == KindMainRebase {
		seen = o.OnHost // planted or refused inside: only the host's git decides
	}
	if pr.Kind == KindWrite {
		switch {
		case pr.Want == Open:
			seen = o.Seen && o.OnHost
			if o.Seen && !o.OnHost {
				detail += ", but not on the host"
			}
		case pr.Scratch:
			// The sandbox's own tmpfs takes the write; only the host matters.
			seen = o.OnHost
			if o.Seen && !o.OnHost {
				detail = "written to the sandbox's scratch tmpfs only"
			}
		default:
			seen = o.Seen || o.OnHost
		}
		if o.OnHost && pr.Want != Open {
			detail += "; REACHED THE HOST"
		}
	}
	if pr.Kind == KindHostExec || pr.Kind == KindHiddenRepo || pr.Kind == KindDevShellImport {
		if !o.Seen {
			return Error, "could not plant: " + detail
		}
		seen = o.OnHost
	}
	switch pr.Want {
	case Blocked:
		if seen {
			return Breach, detail
		}
		if pr.HostAbsent {
			return Skip, "absent on host"
		}
		return Pass, detail
	case Open:
		if seen {
			return Pass, detail
		}
		return Fail, detail
	default: // Allowed
		if seen {
			return Warn, detail
		}
		return Pass, detail
	}
}

// Failed reports whether results hold a breach, a failure or an error: the drill's exit 1.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status == Breach || r.Status == Fail || r.Status == Error {
			return true
		}
	}
	return false
}

// Summary counts results by status, e.g. "31 PASS, 1 WARN, 6 SKIP".
func Summary(rs []Result) string {
	order := []Status{Pass, Breach, Fail, Error, Warn, NotHeld, Skip}
	n := map[Status]int{}
	for _, r := range rs {
		n[r.Status]++
	}
	var parts []string
	for _, s := range order {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// Render prints the results as a table: result, probe, expected, observed. The result
// comes first (field review, session 18: last, past two columns of up to 100 characters,
// it sat on a terminal's third wrapped line, apart from its probe).
func Render(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tPROBE\tEXPECTED\tOBSERVED")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Status, oneLine(r.Probe), oneLine(r.Expected), oneLine(r.Observed))
	}
	return tw.Flush()
}

// RenderJSON prints the results as a JSON array (fields documented in docs/json.md):
// every field always present, a list [] when empty.
func RenderJSON(w io.Writer, rs []Result) error {
	out := make([]Result, len(rs))
	for i, r := range rs {
		if r.Targets == nil {
			r.Targets = []string{}
		}
		out[i] = r
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// Settle completes the observations with what only the outside sees: whether a write
// probe's file exists on the host, and whether the host's git runs what a host-exec probe
// planted. Every such file is removed again.
func Settle(p Plan, obs []Observation) []Observation {
	idx := map[string]int{}
	for i, o := range obs {
		idx[o.ID] = i
	}
	for _, pr := range p.Probes {
		if i, ok := idx[pr.ID]; ok && pr.Kind == KindHostExec && len(pr.Targets) == 2 {
			obs[i] = settleHostExec(pr, obs[i])
		}
		if i, ok := idx[pr.ID]; ok && pr.Kind == KindHiddenRepo && len(pr.Targets) == 2 {
			obs[i] = settleHiddenRepo(pr, obs[i])
		}
		if i, ok := idx[pr.ID]; ok && pr.Kind == KindWorktreeGitdir && len(pr.Targets) == 3 && pr.Skip == "" {
			obs[i] = settleWorktreeGitdir(pr, obs[i])
		}
		if i, ok := idx[pr.ID]; ok && pr.Kind == KindWorktreeLink && len(pr.Targets) == 4 && pr.Skip == "" {
			obs[i] = settleWorktreeGitdir(pr, obs[i])
		}
		if i, ok := idx[pr.ID]; ok && pr.Kind == KindMainRebase && len(pr.Targets) == 3 && pr.Skip == "" {
			obs[i] = settleMainRebase(pr, obs[i])
		}
		if i, ok := idx[pr.ID]; ok && pr.Kind == KindDevShellImport && len(pr.Targets) >= 4 && pr.Skip == "" {
			obs[i] = settleDevShellImport(pr, obs[i])
		}
	}
	for _, pr := range p.Probes {
		i, ok := idx[pr.ID]
		if !ok || pr.Skip != "" {
			continue
		}
		if pr.Kind == KindPlant {
			onHost, detail := settlePlant(pr)
			obs[i].OnHost = onHost
			obs[i].Seen = obs[i].Seen || onHost
			obs[i].Detail = "inside: " + obs[i].Detail + "; outside: " + detail
			continue
		}
		if pr.Kind != KindWrite || len(pr.Targets) != 1 {
			continue
		}
		f := pr.Targets[0]
		if _, err := os.Lstat(f); err == nil {
			obs[i].OnHost = true
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				obs[i].Detail += "; could not remove it from the host: " + err.Error()
			}
		}
	}
	return obs
}

// settleHostExec runs git status in the planted repository, as the operator's shell
// prompt would on entering it, and looks for the planted command's marker.
// safe.directory (from the command line, which git trusts) only matters when the drill
// runs as another user than the tree's owner, as in tests.
func settleHostExec(pr Probe, o Observation) Observation {
	repo, marker := pr.Targets[0], pr.Targets[1]
	if o.Seen {
		cmd := exec.Command("git", "-c", "safe.directory="+repo, "status", "--porcelain")
		cmd.Dir = repo
		cmd.Stdout, cmd.Stderr = nil, nil
		cmd.Run() // fails once the audit moved the repository aside: no repository there
		if _, err := os.Lstat(marker); err == nil {
			o.OnHost = true
			o.Detail += "; the host's git status RAN the planted core.fsmonitor"
		} else {
			o.Detail += "; the host's git status ran nothing"
		}
	}
	os.Remove(marker)
	if err := os.RemoveAll(repo); err != nil {
		o.Detail += "; could not remove it from the host: " + err.Error()
	}
	return o
}
