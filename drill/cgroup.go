package drill

// The cgroup probe: a sandbox whose limits a cgroup holds must not be able to change
// that cgroup. A tenant looks for its own cgroup in every cgroup file system it can
// see, then writes its limit files or the parent's cgroup.procs (leaving the cgroup).

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// KindCgroupWrite: a limit file of the sandbox's own cgroup written, or its parent's
// cgroup.procs open for writing = seen.
const KindCgroupWrite Kind = "cgroup-write"

// cgroupLimitFiles are the limit files of v2 and v1 a tenant would raise.
var cgroupLimitFiles = []string{"pids.max", "memory.max", "memory.high", "memory.swap.max", "memory.limit_in_bytes",
	"memory.memsw.limit_in_bytes", "cpu.max", "cpu.cfs_quota_us"}

// cgroupWalkBound bounds the search for the sandbox's own cgroup.
const cgroupWalkBound = 20000

func cgroupProbe() Probe {
	return Probe{ID: "limits:cgroup", Group: "limits", Name: "raise its own limits or leave its cgroup through a cgroup file",
		Kind: KindCgroupWrite, Want: Blocked, Expected: "no writable cgroup file of its own"}
}

// cgroupMountPoints are the cgroup and cgroup2 mounts in mountinfo.
func cgroupMountPoints(mountinfo []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i, x := range f {
			if x == "-" && i+1 < len(f) && (f[i+1] == "cgroup" || f[i+1] == "cgroup2") && len(f) > 4 {
				out = append(out, unescapeMount(f[4]))
			}
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups are the directories under mount whose cgroup.procs list pid.
func ownCgroups(mount string, pid string) []string {
	var out []string
	n := 0
	_ = filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if n++; n > cgroupWalkBound {
			return filepath.SkipAll
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err == nil && containsLine(b, pid) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func containsLine(b []byte, s string) bool {
	for _, l := range strings.Split(string(b), "\n") {
		if l == s {
			return true
		}
	}
	return false
}

// probeCgroupWrite writes each limit file of the sandbox's own cgroup with the value it
// holds (so the drill changes nothing; a tenant would write "max"), and opens the
// parent's cgroup.procs for writing (a tenant would write its pid there and be out).
func probeCgroupWrite() (bool, string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, "", err
	}
	mounts := cgroupMountPoints(mi)
	if len(mounts) == 0 {
		return false, "no cgroup file system in the sandbox", nil
	}
	pid := strconv.Itoa(os.Getpid())
	found := 0
	for _, m := range mounts {
		for _, d := range ownCgroups(m, pid) {
			found++
			for _, name := range cgroupLimitFiles {
				p := filepath.Join(d, name)
				cur, err := os.ReadFile(p)
				if err != nil {
					continue
				}
				f, err := os.OpenFile(p, os.O_WRONLY, 0)
				if err != nil {
					continue
				}
				_, werr := f.Write(cur)
				f.Close()
				if werr == nil {
					return true, fmt.Sprintf("wrote %s (its own limit, %s): the sandbox can raise it", p, strings.TrimSpace(string(cur))), nil
				}
			}
			pp := filepath.Join(filepath.Dir(d), "cgroup.procs")
			if f, err := os.OpenFile(pp, os.O_WRONLY, 0); err == nil {
				f.Close()
				return true, "opened " + pp + " for writing: the sandbox can move itself out of its cgroup", nil
			}
		}
	}
	if found == 0 {
		return false, fmt.Sprintf("%d cgroup file system(s) visible, its own cgroup in none", len(mounts)), nil
	}
	return false, fmt.Sprintf("its own cgroup in %d place(s), no limit file and no parent's cgroup.procs writable", found), nil
}
