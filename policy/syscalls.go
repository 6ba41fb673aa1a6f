package policy

// The bwrap sandbox's syscall filter, as data: named groups, what each refuses and why.
// backend/bwrap/seccomp compiles them to BPF; profiles check a syscalls key against them;
// SANDBOX.md names the opt-in ones; the drill probes each group. docs/bwrap.md explains
// each group; this file is the one place that lists them.

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// SyscallFilter is what box run --dry-run and the drill call the filter.
const SyscallFilter = "box-default"

// SyscallGroup is one named part of the filter. A profile loaded from the user's config
// directory may opt back into a group whose OptIn is set (`syscalls = ["ptrace"]`).
type SyscallGroup struct {
	Name string
	Why  string
	// Refused are refused outright, with Errno (EPERM when 0).
	Refused []string
	Errno   unix.Errno
	// Rules refuse a syscall only for some arguments.
	Rules []SyscallRule
	// OptIn: a user profile may turn this group off, for tools that need it.
	OptIn bool
}

// SyscallRule refuses Syscall (EPERM) when every one of Tests holds.
type SyscallRule struct {
	Syscall string
	Tests   []SyscallTest
}

// SyscallTest compares the low 32 bits of argument Arg: the kernel truncates every argument
// tested here (int family, unsigned int cmd, unsigned int persona, the CLONE_NEW* bits)
// to those, so the high half is never compared (a set high bit must not dodge a match:
// the TIOCSTI bypass of CVE-2019-10063).
type SyscallTest struct {
	Arg int
	Op  SyscallOp
	// Values for SyscallIn and SyscallNotIn; one mask for SyscallAnyBit.
	Values []uint32
}

// SyscallOp is how a SyscallTest compares.
type SyscallOp string

const (
	SyscallIn     SyscallOp = "in"      // the argument is one of Values
	SyscallNotIn  SyscallOp = "not-in"  // the argument is none of Values
	SyscallAnyBit SyscallOp = "any-bit" // the argument has any bit of Values[0] set
)

// Socket families and protocols the sandbox may use.
const (
	afUnix       = unix.AF_UNIX
	afInet       = unix.AF_INET
	afInet6      = unix.AF_INET6
	afNetlink    = unix.AF_NETLINK
	netlinkRoute = unix.NETLINK_ROUTE
)

// ioctl and personality numbers are the same on both architectures (asm-generic).
const (
	tiocsti   = 0x5412
	tioclinux = 0x541c
	tiocexcl  = 0x540c
	perLinux  = 0x0000
	perQuery  = 0xffffffff // personality(0xffffffff) reads the persona
)

// cloneNew are the namespace-creating clone flags.
const cloneNew = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// SyscallGroups is the filter, in the order it is compiled.
var SyscallGroups = []SyscallGroup{
	{Name: "sockets", Why: "only AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK with NETLINK_ROUTE (glibc's resolver and getifaddrs need it): " +
		"AF_VSOCK is not network-namespaced (it reaches the hypervisor and other guests from tier none), other netlink " +
		"protocols (SOCK_DIAG, AUDIT, KOBJECT_UEVENT) show the host, and rare families (AF_ALG, AF_TIPC, AF_RDS, AF_CAN...) are where socket exploits live",
		Rules: []SyscallRule{
			{Syscall: "socket", Tests: []SyscallTest{{Arg: 0, Op: SyscallNotIn, Values: []uint32{afUnix, afInet, afInet6, afNetlink}}}},
			{Syscall: "socket", Tests: []SyscallTest{{Arg: 0, Op: SyscallIn, Values: []uint32{afNetlink}}, {Arg: 2, Op: SyscallNotIn, Values: []uint32{netlinkRoute}}}},
			// Only AF_UNIX makes pairs; for any other family the kernel still runs the
			// family's create code before refusing.
			{Syscall: "socketpair", Tests: []SyscallTest{{Arg: 0, Op: SyscallNotIn, Values: []uint32{afUnix}}}},
		}},
	{Name: "io_uring", OptIn: true, Why: "io_uring bypasses the syscall filter for the I/O it does and was the kernel's largest source of exploitable bugs (Google disabled it fleet-wide; Docker refuses it)",
		Refused: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}},
	{Name: "userfaultfd", OptIn: true, Why: "userfaultfd lets a process stall the kernel mid-copy, the standard way to win use-after-free races",
		Refused: []string{"userfaultfd"}},
	{Name: "perf", OptIn: true, Why: "perf_event_open is a large, often exploited interface and a side channel on the host's CPUs",
		Refused: []string{"perf_event_open"}},
	{Name: "bpf", Why: "eBPF programs run in the kernel; unprivileged bpf is the verifier's attack surface",
		Refused: []string{"bpf"}},
	{Name: "ptrace", OptIn: true, Why: "tracing another process (or stopping the sandbox's pid 1, which hung box) and reading or writing its memory or fds; kcmp leaks kernel pointer order",
		Refused: []string{"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp"}},
	{Name: "keyring", OptIn: true, Why: "the kernel keyring is not namespaced by bwrap: Kerberos caches and AFS tokens live there, reachable by serial number",
		Refused: []string{"keyctl", "add_key", "request_key"}},
	{Name: "personality", OptIn: true, Why: "READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE switch off exploit mitigations for the process and its children; PER_LINUX and the query (0xffffffff) stay",
		Rules: []SyscallRule{{Syscall: "personality", Tests: []SyscallTest{{Arg: 0, Op: SyscallNotIn, Values: []uint32{perLinux, perQuery}}}}}},
	{Name: "mount", Why: "mounting and the new mount API (belt and braces with bwrap's namespaces and dropped capabilities)",
		Refused: []string{"mount", "umount2", "pivot_root", "fsopen", "fsmount", "move_mount", "open_tree", "open_tree_attr", "fsconfig", "fspick", "mount_setattr"}},
	{Name: "namespaces", Why: "new namespaces are where unprivileged users gain capabilities over kernel code (bwrap's --disable-userns closes user namespaces too)",
		Refused: []string{"unshare", "setns"},
		Rules:   []SyscallRule{{Syscall: "clone", Tests: []SyscallTest{{Arg: 0, Op: SyscallAnyBit, Values: []uint32{cloneNew}}}}}},
	{Name: "clone3", Errno: unix.ENOSYS, Why: "clone3 passes its flags in memory the filter cannot read; ENOSYS makes glibc fall back to clone, whose flags it checks",
		Refused: []string{"clone3"}},
	{Name: "tty", Why: "TIOCSTI types into the terminal box runs in (commands run after box exits); TIOCLINUX does the same on a virtual console; TIOCEXCL on a terminal the Landlock mode shares leaves it exclusive after box exits (every open of it by you fails)",
		Rules: []SyscallRule{{Syscall: "ioctl", Tests: []SyscallTest{{Arg: 1, Op: SyscallIn, Values: []uint32{tiocsti, tioclinux, tiocexcl}}}}}},
	{Name: "modules", Why: "loading and unloading kernel modules",
		Refused: []string{"init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms"}},
	{Name: "kexec", Why: "replacing the running kernel",
		Refused: []string{"kexec_load", "kexec_file_load"}},
	{Name: "host", Why: "what only the host's administrator does: reboot, swap, process accounting, raw I/O ports, the clock, quotas",
		Refused: []string{"reboot", "swapon", "swapoff", "acct", "iopl", "ioperm", "clock_settime", "settimeofday", "clock_adjtime", "quotactl"}},
	{Name: "handles", Why: "open_by_handle_at opens any file on a filesystem by handle, past the mount namespace (the Docker 'shocker' escape); name_to_handle_at makes the handles",
		Refused: []string{"open_by_handle_at", "name_to_handle_at"}},
	{Name: "kernel-info", Why: "the kernel log (syslog) gives addresses that defeat KASLR when dmesg_restrict is off",
		Refused: []string{"syslog"}},
	{Name: "numa", OptIn: true, Why: "move_pages and migrate_pages act on other processes' memory and have leaked it",
		Refused: []string{"move_pages", "migrate_pages"}},
	{Name: "obsolete", Why: "syscalls no current program uses, with old, little-reviewed code behind them",
		Refused: []string{"uselib", "ustat", "sysfs", "_sysctl", "nfsservctl", "lookup_dcookie"}},
}

// SyscallGroupNamed returns the group named name.
func SyscallGroupNamed(name string) (SyscallGroup, bool) {
	for _, g := range SyscallGroups {
		if g.Name == name {
			return g, true
		}
	}
	return SyscallGroup{}, false
}

// SyscallOptInNames lists the groups a user profile may opt back into.
func SyscallOptInNames() []string {
	var out []string
	for _, g := range SyscallGroups {
		if g.OptIn {
			out = append(out, g.Name)
		}
	}
	return out
}

// SyscallOptInError names a syscall group a profile may not turn off.
type SyscallOptInError struct {
	Group string
	Known bool // it exists but is not one a profile may turn off
}

func (e *SyscallOptInError) Error() string {
	if e.Known {
		return fmt.Sprintf("syscalls: group %q cannot be turned off (it guards the host, not a tool's needs)", e.Group)
	}
	return fmt.Sprintf("syscalls: no syscall group %q", e.Group)
}

// Hint lists what may be named.
func (e *SyscallOptInError) Hint() string {
	return "the groups a profile may opt back into are: " + strings.Join(SyscallOptInNames(), ", ")
}

// CheckSyscallOptIn refuses names that are not opt-in groups.
func CheckSyscallOptIn(names []string) error {
	for _, n := range names {
		g, ok := SyscallGroupNamed(n)
		if !ok || !g.OptIn {
			return &SyscallOptInError{Group: n, Known: ok}
		}
	}
	return nil
}
