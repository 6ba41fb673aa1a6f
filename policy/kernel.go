package policy

import "strings"

// KernelPath is a host path whose files are the kernel's interfaces, not data: a profile
// mount of it (or of a directory holding it, bound recursively) hands the sandbox what
// no tier gives.
type KernelPath struct {
	Path string
	// ReadOnlyOK: a read-only mount is harmless; only a writable one is refused.
	ReadOnlyOK bool
	What       string // what the sandbox would get
}

// KernelPaths are refused as profile mounts, in this order (the first match names it).
var KernelPaths = []KernelPath{
	{"/proc", false, "the host's processes (their environments, memory and open files, readable as your user)"},
	{"/sys/fs/cgroup", true, "cgroup files (a writable one lets the sandbox raise its own limits or leave its cgroup)"},
	{"/sys", true, "kernel settings"},
	{"/dev", true, "the host's devices"},
}

// KernelAt names what a mount of p gives the sandbox when p is, holds or lies in a
// kernel path that such a mount may not have ("" when none).
func KernelAt(p string, rw bool) string {
	for _, k := range KernelPaths {
		if k.ReadOnlyOK && !rw {
			continue
		}
		if p == k.Path || strings.HasPrefix(p, k.Path+"/") || p == "/" || strings.HasPrefix(k.Path, p+"/") {
			return k.What
		}
	}
	return ""
}
