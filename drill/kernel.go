package drill

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/policy"
	"golang.org/x/sys/unix"
)

// The kernel surface's probes: what the sandboxed command can make the kernel do beyond
// its namespaces.
const (
	KindFD        Kind = "fd"                 // the fd the drill leaked (Targets[0]: "FD DEV:INO") open inside = seen
	KindKeyring   Kind = "keyring"            // the session or user keyring is the host's (Targets: their serials, 0 none) = seen
	KindSeccomp   Kind = "seccomp"            // no seccomp filter on the probe, or one that refuses nothing = seen
	KindSyscall   Kind = "syscall"            // any syscall of Targets not refused (EPERM; clone3 ENOSYS) = seen
	KindSocket    Kind = "socket"             // any socket of Targets (socketTargets names) creatable = seen
	KindTraceInit Kind = "trace-init"         // the sandbox's pid 1 can be ptrace-attached (and is left stopped) = seen
	KindTerminal  Kind = "terminal"           // inside: fd 2's modes changed; seen = still changed after (SettleTerminal)
	KindTermExcl  Kind = "terminal-exclusive" // inside: TIOCEXCL on fd 2; seen = still exclusive after (SettleTermExclusive)
	KindSysVShm   Kind = "sysv-shm"           // the operator's segment Targets[0] ("ID MARKER") attached and read = seen
)

// Kernel is what BuildPlan needs for the kernel group.
type Kernel struct {
	// LeakedFD is an fd the drill holds open, without close-on-exec, on the operator's
	// home, as a launcher that leaks fds would (0: none); LeakedDev/Ino identify it.
	LeakedFD             int
	LeakedDev, LeakedIno uint64
	// OptedOut are the filter groups the profile turned off (syscalls = [...]).
	OptedOut []string
	// Terminal: the probe's stderr is a terminal the drill watches; TerminalDev is its
	// device number (the host-tty row looks for it inside).
	Terminal    bool
	TerminalDev uint64
	// ShmID is a System V shared memory segment of the operator's the drill made, holding
	// ShmMarker (-1: none could be made).
	ShmID     int
	ShmMarker string
	// OwnPID is box's drill process outside the sandbox, OwnStart its start time: the
	// other-process row's target (0: none).
	OwnPID   int
	OwnStart string
	// Watch are the operator's home and ~/.ssh ("PATH DEV:INO"), the watch-home row's.
	Watch []string
}

// socketTarget is a socket the probe tries to make.
type socketTarget struct {
	name               string
	family, typ, proto int
}

// socketTargets: the families and netlink protocols the filter refuses that an
// unprivileged process can otherwise open, and (allowed) the ones it must keep.
var socketTargets = []socketTarget{
	{"AF_VSOCK", unix.AF_VSOCK, unix.SOCK_STREAM, 0},
	{"NETLINK_SOCK_DIAG", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG},
	{"NETLINK_AUDIT", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT},
	{"NETLINK_KOBJECT_UEVENT", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_KOBJECT_UEVENT},
	{"NETLINK_GENERIC", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_GENERIC},
	{"NETLINK_XFRM", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_XFRM},
	{"NETLINK_NETFILTER", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_NETFILTER},
	{"AF_ALG", unix.AF_ALG, unix.SOCK_SEQPACKET, 0},
	{"AF_TIPC", unix.AF_TIPC, unix.SOCK_RDM, 0},
	{"AF_RDS", unix.AF_RDS, unix.SOCK_SEQPACKET, 0},
	{"AF_CAN", unix.AF_CAN, unix.SOCK_DGRAM, 2},              // CAN_BCM
	{"AF_BLUETOOTH", unix.AF_BLUETOOTH, unix.SOCK_STREAM, 3}, // RFCOMM
	{"AF_PACKET", unix.AF_PACKET, unix.SOCK_DGRAM, 0},
	{"AF_LLC", unix.AF_LLC, unix.SOCK_DGRAM, 0},
	{"AF_PPPOX", unix.AF_PPPOX, unix.SOCK_STREAM, 0},
	{"AF_IEEE802154", unix.AF_IEEE802154, unix.SOCK_DGRAM, 0},
	{"AF_QIPCRTR", unix.AF_QIPCRTR, unix.SOCK_DGRAM, 0},
	{"AF_SMC", unix.AF_SMC, unix.SOCK_STREAM, 0},
	{"AF_MCTP", unix.AF_MCTP, unix.SOCK_DGRAM, 0},
	{"AF_NFC", unix.AF_NFC, unix.SOCK_DGRAM, 0},
	{"AF_PHONET", unix.AF_PHONET, unix.SOCK_DGRAM, 0},
	{"AF_X25", unix.AF_X25, unix.SOCK_SEQPACKET, 0},
	{"AF_AX25", unix.AF_AX25, unix.SOCK_SEQPACKET, 0},
	{"AF_APPLETALK", unix.AF_APPLETALK, unix.SOCK_DGRAM, 0},
	{"AF_KCM", unix.AF_KCM, unix.SOCK_DGRAM, 0},
	{"AF_XDP", unix.AF_XDP, unix.SOCK_RAW, 0},
	// Allowed: the sandbox's own networking and glibc's resolver need these.
	{"AF_UNIX", unix.AF_UNIX, unix.SOCK_STREAM, 0},
	{"AF_INET", unix.AF_INET, unix.SOCK_STREAM, 0},
	{"AF_INET6", unix.AF_INET6, unix.SOCK_DGRAM, 0},
	{"NETLINK_ROUTE", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
}

// AllowedSockets are the socket targets the filter keeps.
var AllowedSockets = []string{"AF_UNIX", "AF_INET", "AF_INET6", "NETLINK_ROUTE"}

// trySocket makes and closes one socket: "" when it could be made, else the errno.
func trySocket(name string) string {
	for _, s := range socketTargets {
		if s.name == name {
			fd, err := unix.Socket(s.family, s.typ|unix.SOCK_CLOEXEC, s.proto)
			if err != nil {
				return errnoName(err)
			}
			unix.Close(fd)
			return ""
		}
	}
	return "unknown"
}

func errnoName(err error) string {
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// HostSockets lists the refused socket targets the operator can open on the host (the
// only ones whose refusal inside proves something).
func HostSockets() []string {
	var out []string
	for _, s := range socketTargets {
		if !slices.Contains(AllowedSockets, s.name) && trySocket(s.name) == "" {
			out = append(out, s.name)
		}
	}
	return out
}

// SessionKeyring is the serial of the caller's session keyring (0: none, or no keyring
// support). It creates nothing.
func SessionKeyring() int {
	id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	if err != nil {
		return 0
	}
	return id
}

// UserKeyring is the serial of the caller's user keyring (0: no keyring support). The
// kernel makes it on a first lookup, as any keyctl of the user's would; it holds nothing.
// Per user namespace: a sandbox without one of its own (the Landlock mode) reaches the
// operator's, and the persistent keyring beside it.
func UserKeyring() int {
	id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_USER_KEYRING, false)
	if err != nil {
		return 0
	}
	return id
}

// drillRow maps the filter's groups to the drill's rows: groups the kernel's own
// capability checks refuse first (module loading, kexec, syslog under dmesg_restrict;
// on aarch64 the obsolete ones do not exist) share the "host" row, whose
// clock calls can tell the filter's EPERM from the kernel's. A switch, not a map built
// at every start of box (issue 24).
func drillRow(group string) (string, bool) {
	switch group {
	case "modules", "kexec", "kernel-info", "obsolete":
		return "host", true
	}
	return "", false
}

// kernelProbes are the kernel group's rows.
func kernelProbes(in Input) []Probe {
	k := in.Kernel
	var out []Probe
	add := func(pr Probe) { out = append(out, pr) }
	optedOut := func(g string) bool { return slices.Contains(k.OptedOut, g) }

	fd := Probe{ID: "kernel:fds", Group: "kernel", Name: "inherited fd (the operator's home)", Kind: KindFD,
		Want: Blocked, Expected: "not inherited"}
	if k.LeakedFD > 0 {
		fd.Targets = []string{fmt.Sprintf("%d %d:%d", k.LeakedFD, k.LeakedDev, k.LeakedIno)}
	} else {
		fd.Skip = "no fd leaked to test with"
	}
	add(fd)
	kr := Probe{ID: "kernel:keyring", Group: "kernel", Name: "session and user keyrings", Kind: KindKeyring, Want: Blocked,
		Expected: "fresh ones (and keyctl refused)"}
	if in.Facts.SessionKeyring != 0 || in.Facts.UserKeyring != 0 {
		kr.Targets = []string{strconv.Itoa(in.Facts.SessionKeyring), strconv.Itoa(in.Facts.UserKeyring)}
	} else {
		kr.Skip = "no keyring on host"
	}
	add(kr)
	shm := Probe{ID: "kernel:sysv-shm", Group: "kernel", Name: "System V shared memory of yours", Kind: KindSysVShm,
		Want: Blocked, Expected: "not attachable (an IPC namespace of its own, or SysV IPC refused)"}
	if k.ShmID >= 0 && k.ShmMarker != "" {
		shm.Targets = []string{strconv.Itoa(k.ShmID) + " " + k.ShmMarker}
	} else {
		shm.Skip = "no segment could be made on the host to test with"
	}
	add(shm)
	add(Probe{ID: "kernel:seccomp", Group: "kernel", Name: "syscall filter", Kind: KindSeccomp, Want: Blocked,
		Expected: policy.SyscallFilter + " in force"})

	rows := map[string]*Probe{}
	var order []string
	for _, g := range policy.SyscallGroups {
		if g.Name == "sockets" {
			continue
		}
		row := g.Name
		if r, ok := drillRow(g.Name); ok {
			row = r
		}
		pr := rows[row]
		if pr == nil {
			pr = &Probe{ID: "syscall:" + row, Group: "syscalls", Name: row, Kind: KindSyscall, Want: Blocked, Expected: "EPERM"}
			if g.Errno == unix.ENOSYS {
				pr.Expected = "ENOSYS"
			}
			rows[row] = pr
			order = append(order, row)
		}
		names := append([]string{}, g.Refused...)
		for _, r := range g.Rules {
			names = append(names, r.Syscall)
		}
		for _, n := range names {
			if Attempted(n) && !slices.Contains(pr.Targets, n) {
				pr.Targets = append(pr.Targets, n)
			}
		}
		if optedOut(g.Name) {
			pr.Want, pr.Expected = Allowed, "allowed (profile syscalls)"
		}
	}
	for _, row := range order {
		add(*rows[row])
	}

	var vsock, netlink, other []string
	for _, s := range in.Facts.Sockets {
		switch {
		case s == "AF_VSOCK":
			vsock = append(vsock, s)
		case strings.HasPrefix(s, "NETLINK_"):
			netlink = append(netlink, s)
		default:
			other = append(other, s)
		}
	}
	for _, s := range []struct {
		id, name string
		targets  []string
	}{{"vsock", "AF_VSOCK (the hypervisor, other guests)", vsock}, {"netlink", "netlink beyond NETLINK_ROUTE", netlink}, {"other", "other socket families", other}} {
		pr := Probe{ID: "socket:" + s.id, Group: "syscalls", Name: s.name, Kind: KindSocket, Targets: s.targets, Want: Blocked, Expected: "EPERM"}
		if len(s.targets) == 0 {
			pr.Skip = "none can be opened on the host"
		}
		add(pr)
	}
	add(Probe{ID: "socket:allowed", Group: "syscalls", Name: "AF_UNIX, AF_INET(6), NETLINK_ROUTE", Kind: KindSocket,
		Targets: AllowedSockets, Want: Open, Expected: "all work"})

	ti := Probe{ID: "kernel:trace-init", Group: "kernel", Name: "ptrace the sandbox's pid 1", Kind: KindTraceInit, Want: Blocked, Expected: "refused"}
	if optedOut("ptrace") {
		ti.Want, ti.Expected = Allowed, "allowed (profile syscalls)"
	}
	add(ti)
	term := Probe{ID: "kernel:terminal", Group: "kernel", Name: "terminal modes after the sandbox", Kind: KindTerminal, Want: Blocked, Expected: "restored"}
	if !k.Terminal {
		term.Skip = "no terminal to test with"
	}
	add(term)
	excl := Probe{ID: "kernel:tty-exclusive", Group: "kernel", Name: "the terminal's exclusive flag (TIOCEXCL) after the sandbox",
		Kind: KindTermExcl, Want: Blocked, Expected: "not exclusive after"}
	if !k.Terminal {
		excl.Skip = "no terminal to test with"
	}
	add(excl)
	add(hostTTYProbe(k))
	add(termStringsProbe(k, in.Nonce))
	add(screenProbe(k, in.Nonce))
	add(sendZerocopyProbe())
	add(otherProcessProbe(k.OwnPID, k.OwnStart))
	add(watchHomeProbe(k.Watch))
	add(netlinkAdminProbe())
	return out
}

func probeFD(targets []string) (bool, string, error) {
	if len(targets) != 1 {
		return false, "", fmt.Errorf("want one fd target")
	}
	var fd int
	var dev, ino uint64
	if _, err := fmt.Sscanf(targets[0], "%d %d:%d", &fd, &dev, &ino); err != nil {
		return false, "", fmt.Errorf("target %q: %v", targets[0], err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Sprintf("fd %d not open", fd), nil
	}
	if st.Dev != dev || st.Ino != ino {
		return false, fmt.Sprintf("fd %d is something else", fd), nil
	}
	d := fmt.Sprintf("fd %d open on the operator's home", fd)
	if ents, err := os.ReadDir("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		d += fmt.Sprintf(", %d entries listed through it", len(ents))
	}
	return true, d, nil
}

// probeKeyring asks for the session keyring and the user keyring (keyctl, as a Kerberos
// tool would): either being the host's (targets: their serials) is seen. A keyring found
// is the way to every key in it that the user may read.
func probeKeyring(targets []string) (bool, string) {
	var own []string
	for i, spec := range []int{unix.KEY_SPEC_SESSION_KEYRING, unix.KEY_SPEC_USER_KEYRING} {
		name := [...]string{"session", "user"}[i]
		id, err := unix.KeyctlGetKeyringID(spec, false)
		if err != nil {
			return false, "keyctl refused: " + errnoName(err)
		}
		if i < len(targets) && targets[i] != "0" && strconv.Itoa(id) == targets[i] {
			return true, "the host's " + name + " keyring (" + targets[i] + ")"
		}
		own = append(own, name+" "+strconv.Itoa(id))
	}
	return false, "keyrings of its own (" + strings.Join(own, ", ") + ")"
}

// probeSeccomp: a filter is loaded and it refuses unshare(0), a no-op the kernel itself
// allows (so an allow-everything filter does not pass).
func probeSeccomp() (bool, string, error) {
	st, err := status("self")
	if err != nil {
		return false, "", err
	}
	if st["Seccomp"] != "2" {
		return true, "no filter (Seccomp " + st["Seccomp"] + ")", nil
	}
	d := "filter in force (" + st["Seccomp_filters"] + " loaded)"
	if err := unix.Unshare(0); err != unix.EPERM {
		return true, d + ", but unshare(0) is not refused: " + fmt.Sprint(err), nil
	}
	return false, d + ", unshare refused", nil
}

// probeSyscalls makes each syscall; the detail lists NAME=ERRNO (ok: it succeeded).
func probeSyscalls(names []string) (bool, string, error) {
	res, err := TrySyscalls(names)
	if err != nil {
		return false, "", err
	}
	seen := false
	var parts []string
	for _, r := range res {
		e := r.Errno
		if e == "" {
			e = "ok"
		}
		if e != "EPERM" && !(r.Name == "clone3" && e == "ENOSYS") {
			seen = true
		}
		parts = append(parts, r.Name+"="+e)
	}
	return seen, strings.Join(parts, " "), nil
}

func probeSockets(names []string) (bool, string) {
	seen := false
	var parts []string
	for _, n := range names {
		e := trySocket(n)
		if e == "" {
			seen = true
			e = "ok"
		}
		parts = append(parts, n+"="+e)
	}
	return seen, strings.Join(parts, " ")
}

// probeTraceInit attaches to the sandbox's pid 1 as a debugger would and leaves it
// stopped: box must not hang on it once the probe runner has exited (it kills a pid 1
// left stopped after the command ended).
func probeTraceInit() (bool, string, error) {
	// Only the sandbox's own pid 1 (bwrap's): never a host's init, whatever runs this.
	if comm, err := os.ReadFile("/proc/1/comm"); err != nil || strings.TrimSpace(string(comm)) != "bwrap" {
		return false, "", fmt.Errorf("pid 1 is not the sandbox's (%q): not probed", strings.TrimSpace(string(comm)))
	}
	// ptrace ties the tracee to this thread; it stays the tracer until the runner exits.
	runtime.LockOSThread()
	if err := unix.PtraceAttach(1); err != nil {
		runtime.UnlockOSThread()
		return false, "refused: " + errnoName(err), nil
	}
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(1, &ws, unix.WALL, nil); err != unix.EINTR {
			break
		}
	}
	return true, "pid 1 attached and stopped", nil
}

// probeTerminal changes the terminal's modes on stderr (echo and canonical input off),
// as `stty -echo` or a raw-mode program would; whether box put them back is seen outside.
func probeTerminal() (bool, string, error) {
	t, err := unix.IoctlGetTermios(2, unix.TCGETS)
	if err != nil {
		return false, "", fmt.Errorf("stderr is not a terminal: %v", err)
	}
	t.Lflag &^= unix.ECHO | unix.ICANON
	if err := unix.IoctlSetTermios(2, unix.TCSETS, t); err != nil {
		return false, "", err
	}
	// Exclusive mode: not a termios mode, and every later open of the terminal fails.
	// box's filter refuses it (EPERM); whether the terminal is left exclusive is seen
	// outside either way.
	if err := unix.IoctlSetInt(2, unix.TIOCEXCL, 0); errors.Is(err, unix.EPERM) {
		return false, "echo and canonical mode turned off inside; exclusive mode refused (EPERM)", nil
	} else if err != nil {
		return false, "", fmt.Errorf("TIOCEXCL: %v", err)
	}
	return false, "echo and canonical mode turned off and exclusive mode on inside", nil
}

// probeTermExclusive sets the exclusive flag on stderr's terminal, as a hostile command
// would on a terminal it shares with the operator (the Landlock mode): every later open
// of it by the operator's programs fails with EBUSY. Whether it outlived the run is seen
// outside.
func probeTermExclusive() (bool, string, error) {
	if _, err := unix.IoctlGetTermios(2, unix.TCGETS); err != nil {
		return false, "", fmt.Errorf("stderr is not a terminal: %v", err)
	}
	if err := unix.IoctlSetInt(2, unix.TIOCEXCL, 0); err != nil {
		return false, "TIOCEXCL refused (" + err.Error() + ")", nil
	}
	return false, "TIOCEXCL set inside", nil
}

// SettleTermExclusive records, outside, whether the drill's terminal was left exclusive.
func SettleTermExclusive(obs []Observation, exclusive bool) []Observation {
	for i := range obs {
		if obs[i].ID == "kernel:tty-exclusive" && obs[i].Err == "" {
			obs[i].OnHost = exclusive
			if exclusive {
				obs[i].Detail += "; STILL EXCLUSIVE after box exited: every open of the terminal fails"
			} else {
				obs[i].Detail += "; not exclusive after"
			}
		}
	}
	return obs
}

// SettleTerminal records, outside, whether the terminal's modes were still changed once
// the sandbox had ended.
func SettleTerminal(obs []Observation, stillChanged bool) []Observation {
	for i := range obs {
		if obs[i].ID == "kernel:terminal" && obs[i].Err == "" {
			obs[i].OnHost = stillChanged
			if stillChanged {
				obs[i].Detail += "; STILL CHANGED after box exited"
			} else {
				obs[i].Detail += "; restored after"
			}
		}
	}
	return obs
}

// RefusedSockets names every socket target the filter refuses.
func RefusedSockets() []string {
	var out []string
	for _, s := range socketTargets {
		if !slices.Contains(AllowedSockets, s.name) {
			out = append(out, s.name)
		}
	}
	return out
}

// probeSysVShm attaches the operator's segment by its id, as an attacker guessing the
// small ids would, and reads it: the drill's marker there = seen.
func probeSysVShm(targets []string) (bool, string, error) {
	if len(targets) == 0 {
		return false, "", fmt.Errorf("no segment named")
	}
	idText, marker, _ := strings.Cut(targets[0], " ")
	id, err := strconv.Atoi(idText)
	if err != nil {
		return false, "", fmt.Errorf("segment %q: %v", targets[0], err)
	}
	b, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
	if err != nil {
		return false, "shmat " + idText + ": " + err.Error(), nil
	}
	defer unix.SysvShmDetach(b)
	if strings.HasPrefix(string(b), marker) {
		return true, "attached segment " + idText + " and read the host's marker", nil
	}
	return false, "attached segment " + idText + " but it holds something else (an IPC namespace of its own)", nil
}
