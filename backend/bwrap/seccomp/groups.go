// Package seccomp is the bwrap sandbox's syscall filter: a list of named groups (what is
// refused and why, plain data, below) compiled to a classic BPF program for x86_64 and
// aarch64 (with go-seccomp-bpf's syscall tables, copied in systab.go, and a small
// assembler of its own, asm.go), and handed to bwrap's --seccomp fd.
//
// The filter is a deny list over an allow-by-default policy, as Docker's, Flatpak's and
// firejail's are: a coding agent runs compilers, package managers and language runtimes
// that use most of the kernel, and what is refused is the surface no such tool needs and
// every sandbox escape of the last decade went through. Refusals return EPERM (clone3:
// ENOSYS, so glibc falls back to clone, which the filter can inspect), so tools fail
// with an error message instead of a crash. A syscall of another ABI (i386 via int 0x80,
// x32, arm32 compat) kills the process: the filter is keyed on native numbers and cannot
// judge those.
//
// The groups are policy data (policy.SyscallGroups, the one place that lists them);
// this package compiles them.
package seccomp

import "github.com/heavy-duty/box/policy"

// Name is what box run --dry-run and the drill call the filter.
const Name = policy.SyscallFilter

// The filter's groups are policy's; these names keep the compiler's code short.
type (
	Group      = policy.SyscallGroup
	Rule       = policy.SyscallRule
	Test       = policy.SyscallTest
	Op         = policy.SyscallOp
	OptInError = policy.SyscallOptInError
)

const (
	In     = policy.SyscallIn
	NotIn  = policy.SyscallNotIn
	AnyBit = policy.SyscallAnyBit
)

// Groups is the filter, in the order it is compiled.
var Groups = policy.SyscallGroups

// Lookup returns the group named name.
func Lookup(name string) (Group, bool) { return policy.SyscallGroupNamed(name) }

// OptInNames lists the groups a user profile may opt back into.
func OptInNames() []string { return policy.SyscallOptInNames() }

// CheckOptIn refuses names that are not opt-in groups.
func CheckOptIn(names []string) error { return policy.CheckSyscallOptIn(names) }
