package bwrap

import (
	"fmt"
	"strings"

	"github.com/heavy-duty/box/envaudit"
)

// LandlockLines are --dry-run's plan in the Landlock mode: the rules in place of bwrap's
// argv, the command, its environment's names, the filter and what the mode does NOT hold.
func (p *Plan) LandlockLines() []string {
	lp := p.LandlockPlan()
	out := []string{
		"landlock: read-only " + strings.Join(lp.ReadOnly, " "),
		"landlock: read-write " + strings.Join(lp.ReadWrite, " "),
		"landlock: devices " + strings.Join(lp.Devices, " "),
		fmt.Sprintf("landlock: network tier %s (sockets: AF_UNIX only; TCP bind and connect refused)", lp.Tier),
		fmt.Sprintf("landlock: rlimits nproc %d, address space %d bytes", lp.Nproc, lp.AddrSpace),
		"landlock: refused unless on the caller: " + strings.Join(selfOnlyNames(), " ") + "; System V IPC refused",
		"command: " + strings.Join(p.Spec.Command, " "),
		"env: " + strings.Join(envaudit.Names(p.Vars), " "),
	}
	if p.Spec.Seccomp != nil {
		out = append(out, "seccomp: "+p.Spec.Seccomp.Describe())
	}
	return append(out, p.IsolationLines()...)
}
