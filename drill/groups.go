package drill

// Choosing the bwrap drill's groups (box drill --group): a drill of one group runs only
// that group's probes, so a test that judges the ssh rows does not pay for the ~180
// others. What was left out is said aloud (Groups.LeftOut), and a name that is not a
// group is refused, never accepted and ignored.

import (
	"fmt"
	"slices"
	"strings"
)

// BwrapGroups is every group of the bwrap drill's rows, in report order: what --group
// may name. TestBwrapGroupsCatalogue holds it to the rows the drill makes.
var BwrapGroups = []string{
	"secrets", "env", "sockets", "nix", "processes", "privileges", "writes", "host-exec",
	"network", "kernel", "syscalls", "limits", "protect", "ports", "ssh", "trust",
}

// UnknownGroupError: a group was asked for that the bwrap drill does not have.
type UnknownGroupError struct{ Name string }

func (e *UnknownGroupError) Error() string {
	return fmt.Sprintf("no drill group %q (the groups: %s)", e.Name, strings.Join(BwrapGroups, ", "))
}

// Groups is the drill's choice of groups; the zero value is all of them. Only
// SelectGroups makes one, so it never holds a name that is not a group.
type Groups struct{ only []string }

// SelectGroups checks the names asked for (each may be a comma-separated list, as the
// flag takes them); none at all is every group.
func SelectGroups(names []string) (Groups, error) {
	var g Groups
	for _, n := range names {
		for _, part := range strings.Split(n, ",") {
			part = strings.TrimSpace(part)
			if !slices.Contains(BwrapGroups, part) {
				return Groups{}, &UnknownGroupError{Name: part}
			}
			if !slices.Contains(g.only, part) {
				g.only = append(g.only, part)
			}
		}
	}
	return g, nil
}

// Keep says whether group's rows are drilled.
func (g Groups) Keep(group string) bool { return len(g.only) == 0 || slices.Contains(g.only, group) }

// LeftOut names the groups not drilled, in report order (none when all are).
func (g Groups) LeftOut() []string {
	var out []string
	for _, n := range BwrapGroups {
		if !g.Keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// Probes is ps without the probes of the groups left out.
func (g Groups) Probes(ps []Probe) []Probe {
	return slices.DeleteFunc(slices.Clone(ps), func(p Probe) bool { return !g.Keep(p.Group) })
}

// Results is rs without the rows of the groups left out (rows the outside makes
// without a probe: the trust row, the Landlock mode's own).
func (g Groups) Results(rs []Result) []Result {
	return slices.DeleteFunc(slices.Clone(rs), func(r Result) bool { return !g.Keep(r.Group) })
}

// Empty names the chosen groups that have no row in rs (a group with nothing to drill
// in this sandbox, e.g. ssh without box's filtering agent): said aloud, not a silent
// empty report.
func (g Groups) Empty(rs []Result) []string {
	var out []string
	for _, n := range g.only {
		if !slices.ContainsFunc(rs, func(r Result) bool { return r.Group == n }) {
			out = append(out, n)
		}
	}
	return out
}
