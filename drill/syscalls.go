package drill

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"golang.org/x/sys/unix"
)

// attempt is how the probe calls one refused syscall: with arguments chosen so that,
// without the filter, the kernel does nothing harmful and, where it can, answers with
// something other than EPERM (success, EFAULT, EINVAL, EBADF...). Oracle marks the
// attempts where that holds for an unprivileged caller on any kernel: there, EPERM can
// only come from the filter. The others (module loading, kexec, reboot, swap...) are
// refused by the kernel's capability check first; the filter guards the code before it.
type attempt struct {
	call   func(nr uintptr) (uintptr, syscall.Errno)
	oracle bool
	undo   func() // put back what a successful call changed (outside a sandbox)
}

var (
	zero      [8]byte
	bigAttr   = func() []byte { b := make([]byte, 4096); b[4095] = 1; return b }()
	rootPath  = []byte("/\x00")
	emptyPath = []byte("\x00")
	keyType   = []byte("user\x00")
	keyDesc   = []byte("box-drill-no-such-key\x00")
	uffdFlags = uintptr(unix.O_CLOEXEC | 1) // UFFD_USER_MODE_ONLY: allowed unprivileged since 5.11
	ioBuf     = make([]byte, 64)
)

func p(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func raw(a ...uintptr) func(uintptr) (uintptr, syscall.Errno) {
	var args [6]uintptr
	copy(args[:], a)
	return func(nr uintptr) (uintptr, syscall.Errno) {
		r, _, e := syscall.Syscall6(nr, args[0], args[1], args[2], args[3], args[4], args[5])
		return r, e
	}
}

// closeResult closes an fd a successful call returned.
func closeResult(f func(uintptr) (uintptr, syscall.Errno)) func(uintptr) (uintptr, syscall.Errno) {
	return func(nr uintptr) (uintptr, syscall.Errno) {
		r, e := f(nr)
		if e == 0 {
			syscall.Close(int(r))
		}
		return r, e
	}
}

const bad = ^uintptr(0) // -1: an invalid fd, an all-ones flag word

const atFDCWD = ^uintptr(99) // AT_FDCWD (-100)

// attempts is built on first use: its closures are a hundred allocations that every box
// start-up would otherwise make for a verb few runs use (issue 24).
var attempts = sync.OnceValue(func() map[string]attempt {
	return map[string]attempt{
		// io_uring: entries=1 with zeroed params would make a ring (closed at once).
		"io_uring_setup":    {call: closeResult(func(nr uintptr) (uintptr, syscall.Errno) { return raw(1, p(ioBuf))(nr) }), oracle: true},
		"io_uring_enter":    {call: raw(bad, 0, 0, 0, 0, 0), oracle: true},
		"io_uring_register": {call: raw(bad, 0, 0, 0), oracle: true},
		"userfaultfd":       {call: closeResult(raw(uffdFlags)), oracle: true},
		"perf_event_open":   {call: raw(0, 0, bad, bad, 0), oracle: true}, // EFAULT: no attr
		// A tail of non-zero bytes past union bpf_attr: E2BIG, checked before privilege.
		"bpf":               {call: raw(0, p(bigAttr), uintptr(len(bigAttr))), oracle: true},
		"ptrace":            {call: raw(unix.PTRACE_PEEKDATA, 0x7fffffff, 0, 0), oracle: true}, // ESRCH: no such tracee
		"process_vm_readv":  {call: raw(0x7fffffff, 0, 0, 0, 0, 0), oracle: true},              // ESRCH
		"process_vm_writev": {call: raw(0x7fffffff, 0, 0, 0, 0, 0), oracle: true},
		"process_madvise":   {call: raw(bad, 0, 0, 0, 0), oracle: true}, // EBADF
		"pidfd_getfd":       {call: raw(bad, 0, 0), oracle: true},
		"kcmp":              {call: raw(0x7fffffff, 0x7fffffff, 0, 0, 0), oracle: true},
		"keyctl":            {call: raw(unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd), 0), oracle: true}, // @s, do not create
		"add_key":           {call: raw(p(keyType), 0, 0, 0, 0), oracle: true},                             // EINVAL: no description
		"request_key":       {call: raw(p(keyType), p(keyDesc), 0, 0), oracle: true},                       // ENOKEY
		"personality": {call: raw(0x0400000), oracle: true, // READ_IMPLIES_EXEC
			undo: func() { syscall.Syscall(unix.SYS_PERSONALITY, 0, 0, 0) }},
		"mount":          {call: raw(0, 0, 0, 0, 0), oracle: true},               // EFAULT: no target
		"umount2":        {call: raw(p(rootPath), 0xffff0000), oracle: true},     // EINVAL: bad flags
		"pivot_root":     {call: raw(0, 0)},                                      // needs CAP_SYS_ADMIN first
		"fsopen":         {call: raw(0, 0)},                                      // idem
		"fsmount":        {call: raw(bad, bad, 0)},                               // may_mount() first
		"move_mount":     {call: raw(bad, p(emptyPath), bad, p(emptyPath), bad)}, // idem
		"open_tree":      {call: raw(bad, p(emptyPath), 0), oracle: true},        // EBADF/ENOENT
		"open_tree_attr": {call: raw(bad, p(emptyPath), 0, 0, 0), oracle: true},
		"fsconfig":       {call: raw(bad, 0, 0, 0, 0), oracle: true}, // EBADF/EINVAL
		"fspick":         {call: raw(bad, p(emptyPath), bad)},
		"mount_setattr":  {call: raw(bad, p(emptyPath), bad, 0, 0), oracle: true}, // EINVAL: bad flags
		"unshare":        {call: raw(0), oracle: true},                            // flags 0: a no-op
		"setns":          {call: raw(bad, 0), oracle: true},                       // EBADF
		// CLONE_NEWNS with CLONE_FS is invalid: EINVAL before anything is made.
		"clone":  {call: raw(unix.CLONE_NEWNS | unix.CLONE_FS), oracle: true},
		"clone3": {call: raw(0, 0), oracle: true}, // EINVAL: size 0
		// A netlink pair: EOPNOTSUPP from the family, after its create code ran.
		"socketpair": {call: raw(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_SOCK_DIAG, p(ioBuf)), oracle: true},
		// TIOCSTI on a non-terminal: ENOTTY (or EBADF).
		"ioctl":             {call: raw(bad, unix.TIOCSTI, p(zero[:])), oracle: true},
		"init_module":       {call: raw(0, 0, 0)},
		"finit_module":      {call: raw(bad, 0, 0)},
		"delete_module":     {call: raw(0, 0)},
		"create_module":     {call: raw(0, 0)},
		"query_module":      {call: raw(0, 0, 0, 0, 0)},
		"get_kernel_syms":   {call: raw(0)},
		"kexec_load":        {call: raw(0, 0, 0, bad)},
		"kexec_file_load":   {call: raw(bad, bad, 0, 0, bad)},
		"reboot":            {call: raw(0, 0, 0, 0)},
		"swapon":            {call: raw(0, 0)},
		"swapoff":           {call: raw(0)},
		"acct":              {call: raw(0)},
		"iopl":              {call: raw(0), oracle: true},       // level 0: a no-op
		"ioperm":            {call: raw(0, 0, 0), oracle: true}, // turning nothing off
		"clock_settime":     {call: raw(0, 0), oracle: true},    // EFAULT: read before the check
		"settimeofday":      {call: raw(0, 0)},                  // CAP_SYS_TIME checked even for NULL
		"clock_adjtime":     {call: raw(0, 0), oracle: true},    // EFAULT
		"quotactl":          {call: raw(0, 0, 0, 0)},
		"open_by_handle_at": {call: raw(bad, 0, 0)},
		// A zero-sized handle buffer: EOVERFLOW, the size it needs written back.
		"name_to_handle_at": {call: raw(atFDCWD, p(rootPath), p(ioBuf), p(ioBuf[32:]), 0), oracle: true},
		"syslog":            {call: raw(10, 0, 0)},                          // SIZE_BUFFER: allowed when dmesg_restrict is 0
		"move_pages":        {call: raw(0, 0, 0, 0, 0, 0), oracle: true},    // no pages: a no-op
		"migrate_pages":     {call: raw(0x7fffffff, 0, 0, 0), oracle: true}, // ESRCH
		"uselib":            {call: raw(0)},
		"ustat":             {call: raw(0, 0), oracle: true}, // EFAULT
		"sysfs":             {call: raw(3), oracle: true},    // the number of filesystem types
		"_sysctl":           {call: raw(0)},
		"nfsservctl":        {call: raw(0, 0, 0)},
		"lookup_dcookie":    {call: raw(0, 0, 0)},
	}
})

// SyscallResult is what one refused syscall returned inside.
type SyscallResult struct {
	Name   string `json:"name"`
	Errno  string `json:"errno"` // "" on success
	Oracle bool   `json:"oracle"`
}

// TrySyscalls makes each named syscall once, as attempts describes, on this machine's
// architecture; a name that does not exist here is left out. It runs on one locked
// thread (a refused call must not be retried elsewhere) and undoes what succeeded.
//
// It refuses to run with any effective capability: with privilege, some attempts would
// act (acct(NULL) ends process accounting, for one); inside a sandbox there is none.
func TrySyscalls(names []string) ([]SyscallResult, error) {
	if _, ok := seccomp.SyscallNumber("read"); !ok {
		return nil, fmt.Errorf("no syscall table for %s", runtime.GOARCH)
	}
	if st, err := status("self"); err != nil || strings.TrimLeft(st["CapEff"], "0") != "" {
		return nil, fmt.Errorf("refusing to try privileged syscalls with capabilities (CapEff %s): run the probe inside a sandbox", st["CapEff"])
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out []SyscallResult
	for _, n := range names {
		nr, ok := seccomp.SyscallNumber(n)
		a, known := attempts()[n]
		if !ok || !known {
			continue
		}
		_, e := a.call(uintptr(nr))
		r := SyscallResult{Name: n, Oracle: a.oracle}
		if e != 0 {
			r.Errno = unix.ErrnoName(e)
		} else if a.undo != nil {
			a.undo()
		}
		out = append(out, r)
	}
	return out, nil
}

// Attempted reports whether the probe knows how to call name.
func Attempted(name string) bool { _, ok := attempts()[name]; return ok }
