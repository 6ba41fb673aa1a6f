package bwrap

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's abstract-unix-socket scope (Linux 6.12, Landlock ABI 6): a process in the
// domain cannot connect or send to an abstract socket bound outside it. Abstract
// sockets belong to the network namespace, so tier full, which keeps the host's, would
// otherwise reach every one the host listens on: an X server (keystrokes into the
// operator's terminal), a D-Bus bus, a container runtime's shim.
const (
	landlockScopeABI             = 6
	landlockScopeAbstractUnix    = 1 // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	landlockCreateRulesetVersion = 1 // LANDLOCK_CREATE_RULESET_VERSION
)

// landlockRulesetAttr is struct landlock_ruleset_attr up to the scoped field (ABI 6);
// the kernel takes a shorter struct than its own and zeroes the rest.
type landlockRulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// LandlockABI is the kernel's Landlock ABI version, 0 when Landlock is absent or
// disabled (ENOSYS, EOPNOTSUPP).
func LandlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, landlockCreateRulesetVersion)
	if e != 0 {
		return 0
	}
	return int(v)
}

// scopeAbstractSockets puts the calling thread, and everything it then starts, in a
// Landlock domain that only scopes abstract unix sockets: no file or port access is
// handled, so bwrap's mounts and the command's files are as before. Landlock requires
// no_new_privs first (set on this thread only; spawn's thread is never reused).
func scopeAbstractSockets() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("abstract socket scope: no_new_privs: %w", err)
	}
	attr := landlockRulesetAttr{scoped: landlockScopeAbstractUnix}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("abstract socket scope: landlock_create_ruleset: %w", e)
	}
	defer unix.Close(int(fd))
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		if e == unix.E2BIG {
			return fmt.Errorf("abstract socket scope: box already runs inside 16 nested Landlock domains, the kernel's most (landlock_restrict_self: %w)", e)
		}
		return fmt.Errorf("abstract socket scope: landlock_restrict_self: %w", e)
	}
	return nil
}

// CheckAbstractScope tries the scope for real (box --check): a thread in a fresh scoped
// domain connects to an abstract socket this process bound outside it, and must be
// refused with EPERM.
func CheckAbstractScope() error {
	if abi := LandlockABI(); abi < landlockScopeABI {
		return fmt.Errorf("needs Landlock ABI %d (Linux 6.12 or later, with landlock in the lsm= list); this kernel has %s", landlockScopeABI, landlockText(abi))
	}
	name := "@box-check-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	l, err := net.Listen("unix", name)
	if err != nil {
		return fmt.Errorf("binding a trial abstract socket: %w", err)
	}
	defer l.Close()
	res := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with the goroutine, and its domain with it.
		runtime.LockOSThread()
		if err := scopeAbstractSockets(); err != nil {
			res <- err
			return
		}
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			res <- err
			return
		}
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: name})
		unix.Close(fd)
		switch {
		case err == nil:
			res <- errors.New("the trial socket outside the domain was reachable")
		case !errors.Is(err, unix.EPERM):
			res <- fmt.Errorf("connecting to the trial socket: %w, want EPERM", err)
		default:
			res <- nil
		}
	}()
	return <-res
}
