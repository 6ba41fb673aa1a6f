package bwrap

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

// resolveLimits decides a bwrap sandbox's limits: the profile's cpu, memory and pids,
// else the defaults (all CPUs, half the host's RAM, DefaultPids tasks), and how
// they are held here. (A template's resources are the vm backend's.) A limit that
// cannot be applied comes back in Enforcement.Unenforced, which box reports.
//
// The sandbox's tasks also count toward the user's own RLIMIT_NPROC on the host (nproc;
// RHEL-like systems set 4096): the default takes at most half of it, so the user's other
// sessions keep room to fork, and a profile's pids above it is said to be capped.
func resolveLimits(prof *profiles.Profile, memTotal int64, nproc uint64, cg Cgroup, euid int) (Limits, Enforcement, error) {
	l := Limits{Pids: DefaultPids, Memory: DefaultMemory(memTotal)}
	var notes []string
	if nproc > 0 && nproc/2 < uint64(l.Pids) {
		l.Pids = max(MinPids, int(nproc/2))
	}
	if prof.Pids != nil {
		l.Pids = *prof.Pids
		if nproc > 0 && uint64(l.Pids) >= nproc {
			notes = append(notes, fmt.Sprintf("pids = %d is capped by your own process limit (ulimit -u %d), which the sandbox's tasks share with your other processes", l.Pids, nproc))
		}
	}
	mem, cpu := prof.Memory, prof.CPU
	if mem != "" {
		n, err := templates.ParseSize("memory", mem)
		if err != nil {
			return l, Enforcement{}, err
		}
		if n < MinMemory {
			return l, Enforcement{}, errs.Usage("give the sandbox at least 64MiB", "memory %q: below the 64MiB a sandbox needs", mem)
		}
		l.Memory = n
	}
	if cpu != "" {
		n, err := strconv.Atoi(cpu)
		if err != nil {
			return l, Enforcement{}, fmt.Errorf("cpu %q: want a whole number of CPUs", cpu)
		}
		l.CPU = n
	}
	if l.Memory < MinMemory {
		return l, Enforcement{}, fmt.Errorf("limits: the host's RAM is unknown (%d bytes), so no default memory limit can be set", memTotal)
	}
	e := PlanEnforcement(l, cg, euid)
	e.Unenforced = append(e.Unenforced, notes...)
	if prof.Disk != "" {
		e.Unenforced = append(e.Unenforced, fmt.Sprintf("disk = %q is not enforced: it sizes a vm box's root disk; a bwrap sandbox writes to your own disk (the working directory)", prof.Disk))
	}
	return l, e, nil
}

// LimitsLine is the dry run's account of a plan's limits.
func (p *Plan) LimitsLine() string {
	l, t, e := p.Spec.Limits, p.Spec.Tmpfs, p.Enforce
	cpu := "all"
	if l.CPU > 0 {
		cpu = strconv.Itoa(l.CPU)
	}
	home := "home " + humanBytes(t.Home)
	if p.Spec.HomeDir != "" {
		home = "home on disk (the box's own, not a tmpfs)"
	}
	return fmt.Sprintf("limits: pids %d, memory %s, cpu %s; tmpfs /tmp %s, /var/tmp %s, /dev/shm %s, %s (together %s); held by %s",
		l.Pids, humanBytes(l.Memory), cpu, humanBytes(t.Tmp), humanBytes(t.VarTmp), humanBytes(t.Shm), home, humanBytes(t.Sum()), e.Describe())
}

// limitsText tells the agent its limits (SANDBOX.md): an ENOSPC in /tmp or a refused
// fork is the sandbox's bound, not a broken machine.
func limitsText(l Limits, t Tmpfs) string {
	cpu := "all the host's CPUs"
	if l.CPU > 0 {
		cpu = strconv.Itoa(l.CPU) + " CPU(s)' worth of time"
	}
	home := "`$HOME` " + humanBytes(t.Home) + ", "
	if t.Home == 0 {
		home = "" // a persistent box's home is on disk
	}
	return fmt.Sprintf("At most %d processes and threads at once, %s of memory, %s. The scratch space is held in memory and small: "+
		"`/tmp` %s, %s`/var/tmp` %s, `/dev/shm` %s; put large files in the working directory (on disk). "+
		"Past these, a fork fails (EAGAIN), an allocation fails (ENOMEM) or its process is killed, a write fails (ENOSPC).",
		l.Pids, humanBytes(l.Memory), cpu, humanBytes(t.Tmp), home, humanBytes(t.VarTmp), humanBytes(t.Shm))
}

// humanBytes prints n in the largest binary unit that keeps one decimal honest.
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + units[i]
}

// limitHook wraps the launch's BeforeRelease: the sandbox's pid 1 goes under its limits
// first, then the rest (the internet tier) runs. If the limits cannot be applied the
// command never starts.
func limitHook(x *Enforcer, next func(int) (func(), error)) func(int) (func(), error) {
	return func(pid int) (func(), error) {
		if err := x.Attach(pid); err != nil {
			return nil, needs(NeedLimits, err)
		}
		if next == nil {
			return nil, nil
		}
		return next(pid)
	}
}

// reportLimits says when the limits stopped the command: a memory OOM kill or refused
// forks (cgroups count them), or a command killed by SIGKILL (which under rlimits is
// the only trace).
func reportLimits(w io.Writer, code int, l Limits, o Outcome) {
	if o.OOMKills > 0 {
		fmt.Fprintf(w, "box: warning: the sandbox reached its memory limit (%s): the kernel killed %d process(es)\n", humanBytes(l.Memory), o.OOMKills)
	}
	if o.PidsMax > 0 {
		fmt.Fprintf(w, "box: warning: the sandbox reached its pids limit (%d): %d fork(s) refused\n", l.Pids, o.PidsMax)
	}
	if code == 128+9 && o.OOMKills == 0 {
		fmt.Fprintln(w, "box: warning: the command was killed (SIGKILL)")
	}
}
