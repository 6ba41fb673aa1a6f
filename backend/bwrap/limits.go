package bwrap

import (
	"fmt"
	"strconv"

	"github.com/heavy-duty/box/profiles"
)

// Limits bound what one sandbox can take from the host. Every field is required: a
// sandbox without a bound on its processes or memory can take the whole machine.
type Limits struct {
	Pids   int   // tasks (processes and threads) the sandbox may have at once
	Memory int64 // bytes of memory
	CPU    int   // CPUs' worth of time (0: no CPU limit); needs a cgroup
}

// Tmpfs are the sizes, in bytes, of the sandbox's scratch mounts. Each is its own
// tmpfs; without --size each would be allowed half the host's RAM.
type Tmpfs struct {
	Tmp, VarTmp, Shm, Home int64
}

// Sum is what all the scratch mounts together can hold.
func (t Tmpfs) Sum() int64 { return t.Tmp + t.VarTmp + t.Shm + t.Home }

// TmpfsFor sizes the scratch mounts from the memory limit: tmpfs pages are memory, so
// together they hold at most three quarters of it (/tmp and $HOME a quarter each,
// /var/tmp and /dev/shm an eighth each). Larger trees belong in the working directory,
// which is on disk. homeOnDisk (a persistent box's own home) leaves $HOME out: it is a
// directory on disk, not memory.
func TmpfsFor(memory int64, homeOnDisk bool) Tmpfs {
	q, e := pageDown(memory/4), pageDown(memory/8)
	t := Tmpfs{Tmp: q, Home: q, VarTmp: e, Shm: e}
	if homeOnDisk {
		t.Home = 0
	}
	return t
}

func pageDown(n int64) int64 { return n &^ 4095 }

// Defaults protect the host when a profile names no limit.
const (
	DefaultPids = profiles.DefaultPids
	// MinMemory is the smallest memory limit box accepts: below it a shell and its
	// tools fail in ways that look like bugs of their own.
	MinMemory = 64 << 20
	MinPids   = 16
)

// DefaultMemory is half of the host's RAM: the host keeps the other half.
func DefaultMemory(memTotal int64) int64 { return pageDown(memTotal / 2) }

// homeOnDisk: a persistent box's home is its own directory, not a tmpfs (t.Home is 0).
func validateLimits(l Limits, t Tmpfs, homeOnDisk bool) error {
	if l.Pids < MinPids {
		return fmt.Errorf("pids limit %d: want at least %d", l.Pids, MinPids)
	}
	if l.Memory < MinMemory {
		return fmt.Errorf("memory limit %d bytes: want at least %d MiB", l.Memory, MinMemory>>20)
	}
	if l.CPU < 0 {
		return fmt.Errorf("cpu limit %d: want a positive count, or 0 for none", l.CPU)
	}
	sizes := []int64{t.Tmp, t.VarTmp, t.Shm, t.Home}
	if homeOnDisk {
		if t.Home != 0 {
			return fmt.Errorf("a home on disk has no tmpfs to size")
		}
		sizes = sizes[:3]
	}
	for _, s := range sizes {
		if s <= 0 {
			return fmt.Errorf("a scratch tmpfs has no size: every tmpfs must be bounded")
		}
	}
	return nil
}

// sized is bwrap's --size for the tmpfs that follows it.
func sized(n int64, path string) []string {
	return []string{"--size", strconv.FormatInt(n, 10), "--tmpfs", path}
}
