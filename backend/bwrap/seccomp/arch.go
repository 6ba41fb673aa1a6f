package seccomp

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// The syscall numbers come from systab.go, go-seccomp-bpf's tables for the two
// architectures the filter is built for (TestSyscallTables holds them equal). The
// library's arch package is not linked into box: its init builds the tables of every
// architecture it knows, some 160 KB, in every box process whatever the verb (about 2 ms
// of each start).

type sysEntry struct {
	name string
	nr   int
}

type archInfo struct {
	name  string
	id    uint32     // the audit architecture seccomp_data.arch holds
	calls []sysEntry // sorted by name
}

// archNamed is the table of one of Arches.
func archNamed(name string) (*archInfo, error) {
	switch name {
	case "x86_64":
		return &archInfo{name, auditsysX86_64, sysX86_64}, nil
	case "aarch64":
		return &archInfo{name, auditsysAARCH64, sysAARCH64}, nil
	}
	return nil, fmt.Errorf("seccomp: architecture %q: box's filter is built for %s", name, strings.Join(Arches, " and "))
}

// number is name's syscall number on a.
func (a *archInfo) number(name string) (int, bool) {
	i, ok := slices.BinarySearchFunc(a.calls, name, func(e sysEntry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return 0, false
	}
	return a.calls[i].nr, true
}

// nameOf is the syscall numbered nr on a (for the golden rendering only).
func (a *archInfo) nameOf(nr int) (string, bool) {
	for _, e := range a.calls {
		if e.nr == nr {
			return e.name, true
		}
	}
	return "", false
}

// linuxArch is the Linux name of a Go architecture, as go-seccomp-bpf names it ("" for
// one box knows nothing of).
func linuxArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i386"
	case "arm":
		return "arm"
	}
	return ""
}

// SyscallNumber is name's number on the architecture box was built for (false when that
// has no table or no such syscall): for the drill, which makes the refused calls itself.
func SyscallNumber(name string) (int, bool) {
	a, err := archNamed(linuxArch(runtime.GOARCH))
	if err != nil {
		return 0, false
	}
	return a.number(name)
}
