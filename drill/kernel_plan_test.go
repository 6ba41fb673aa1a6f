package drill

import (
	"slices"
	"testing"

	"github.com/heavy-duty/box/internal/ttyfilter"
	"github.com/heavy-duty/box/policy"
)

// The kernel rows: one per filter group (those the kernel's capability checks refuse
// first share the host row), each group's syscalls all attempted; a profile's opt-in
// turns its rows into WARN; without a leaked fd, socket or terminal the row says why.
func TestKernelPlan(t *testing.T) {
	in := input()
	in.Kernel = Kernel{LeakedFD: 100, LeakedDev: 1, LeakedIno: 2, OptedOut: []string{"ptrace"}, Terminal: true, ShmID: 7, ShmMarker: "m"}
	in.Facts.Sockets = []string{"AF_VSOCK", "NETLINK_SOCK_DIAG"}
	in.Facts.SessionKeyring, in.Facts.UserKeyring = 1234, 5678
	p, err := BuildPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if fd := probe(t, p, "kernel:fds"); !slices.Equal(fd.Targets, []string{"100 1:2"}) || fd.Skip != "" {
		t.Errorf("fd row %+v", fd)
	}
	if kr := probe(t, p, "kernel:keyring"); !slices.Equal(kr.Targets, []string{"1234", "5678"}) {
		t.Errorf("keyring row %+v", kr)
	}
	if r := probe(t, p, "kernel:sysv-shm"); !slices.Equal(r.Targets, []string{"7 m"}) || r.Skip != "" {
		t.Errorf("sysv-shm row %+v", r)
	}
	covered := map[string]bool{}
	for _, pr := range p.Probes {
		if pr.Kind == KindSyscall {
			for _, n := range pr.Targets {
				covered[n] = true
			}
		}
	}
	for _, g := range policy.SyscallGroups {
		for _, n := range g.Refused {
			if !covered[n] {
				t.Errorf("%s (group %s) is in no drill row", n, g.Name)
			}
		}
	}
	if r := probe(t, p, "syscall:ptrace"); r.Want != Allowed {
		t.Errorf("opted-out ptrace: %s", r.Want)
	}
	if r := probe(t, p, "kernel:trace-init"); r.Want != Allowed {
		t.Errorf("opted-out trace-init: %s", r.Want)
	}
	if r := probe(t, p, "syscall:keyring"); r.Want != Blocked {
		t.Errorf("keyring: %s", r.Want)
	}
	probe(t, p, "syscall:host") // modules and kexec are there
	for _, id := range []string{"syscall:modules", "syscall:kexec"} {
		for _, pr := range p.Probes {
			if pr.ID == id {
				t.Errorf("%s should share the host row", id)
			}
		}
	}
	if r := probe(t, p, "socket:other"); r.Skip == "" {
		t.Errorf("socket:other without host sockets: %+v", r)
	}
	if r := probe(t, p, "socket:vsock"); !slices.Equal(r.Targets, []string{"AF_VSOCK"}) {
		t.Errorf("vsock %+v", r)
	}

	in.Kernel = Kernel{}
	in.Facts.SessionKeyring, in.Facts.UserKeyring = 0, 0
	p, _ = BuildPlan(in)
	for _, id := range []string{"kernel:fds", "kernel:keyring", "kernel:sysv-shm", "kernel:terminal", "kernel:terminal-strings"} {
		if probe(t, p, id).Skip == "" {
			t.Errorf("%s: not skipped without its fact", id)
		}
	}
	// The terminal row is judged outside: only modes still changed after count.
	pl := Plan{Probes: []Probe{{ID: "kernel:terminal", Kind: KindTerminal, Want: Blocked}}}
	for _, still := range []bool{false, true} {
		r := Judge(pl, SettleTerminal([]Observation{{ID: "kernel:terminal", Detail: "changed"}}, still))
		if want := map[bool]Status{false: Pass, true: Breach}[still]; r[0].Status != want {
			t.Errorf("still changed %v: %s", still, r[0].Status)
		}
	}
	// The strings row too: BREACH only when one of its sequences reached the terminal.
	ps := Plan{Probes: []Probe{{ID: "kernel:terminal-strings", Kind: KindTermStrings, Want: Blocked}}}
	for _, c := range []struct {
		seen string
		want Status
	}{
		{"text \x1b[1mbold\x1b\\", Pass},
		{"x" + string(termStrings("n1")[0]) + "y", Breach},
		{string(termStrings("n1")[1]), Breach},
		{string(termStrings("other")[0]), Pass}, // another run's nonce
	} {
		r := Judge(ps, SettleTermStrings([]Observation{{ID: "kernel:terminal-strings", Detail: "wrote"}}, []byte(c.seen), "n1"))
		if r[0].Status != c.want {
			t.Errorf("seen %q: %s, want %s", c.seen, r[0].Status, c.want)
		}
	}
	// The screen row: BREACH only when its sequences reached the terminal and box printed
	// no reset after their last arrival.
	sc := Plan{Probes: []Probe{{ID: "kernel:screen", Kind: KindScreen, Want: Blocked}}}
	probe := string(screenSeq("n1"))
	for _, c := range []struct {
		seen string
		want Status
	}{
		{"", Pass}, // dropped by the relay: it hid nothing
		{"out" + probe + "more", Breach},
		{probe + "more" + ttyfilter.Reset + "report", Pass},
		{probe + ttyfilter.Reset + probe, Breach},            // left hidden again after the reset
		{ttyfilter.Reset + probe, Breach},                    // the reset came before it
		{string(screenSeq("other")) + ttyfilter.Reset, Pass}, // another run's
	} {
		r := Judge(sc, SettleScreen([]Observation{{ID: "kernel:screen", Detail: "wrote"}}, []byte(c.seen), "n1"))
		if r[0].Status != c.want {
			t.Errorf("screen, seen %q: %s, want %s", c.seen, r[0].Status, c.want)
		}
	}
}
