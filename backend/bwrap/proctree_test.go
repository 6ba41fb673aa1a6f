package bwrap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// descendantsWhere is the pids of root and the processes below it whose argv matches,
// lowest first, read from /proc (a process that ends while it reads is left out).
func descendantsWhere(root int, match func(argv []string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	var candidates []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if match(strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")) {
			candidates = append(candidates, pid)
		}
	}
	var found []int
	for _, pid := range candidates {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				found = append(found, pid)
				break
			}
		}
	}
	slices.Sort(found)
	return found
}

// descendantWhere is the pid of root or a process below it whose argv matches (0: none
// yet). box run is the lab command's own pid (nsenter, unshare, sh and setpriv exec).
func descendantWhere(root int, match func(argv []string) bool) int {
	if found := descendantsWhere(root, match); len(found) > 0 {
		return found[0]
	}
	return 0
}

// descendantRunning is root or a process below it running prog (its argv[0]'s base
// name) with word among its arguments: 0 when there is none. The shells above the
// sandbox have the server's command line in their arguments too, so the program is named.
func descendantRunning(root int, prog, word string) int {
	return descendantWhere(root, func(argv []string) bool {
		return filepath.Base(argv[0]) == prog && slices.Contains(argv[1:], word)
	})
}

// descendantWithArg is the pid of the one process below root whose argv has arg (the
// test fails when there is none, or more than one).
func descendantWithArg(t *testing.T, root int, arg string) int {
	t.Helper()
	found := slices.DeleteFunc(descendantsWhere(root, func(argv []string) bool { return slices.Contains(argv, arg) }),
		func(pid int) bool { return pid == root })
	if len(found) != 1 {
		t.Fatalf("processes below %d with %q in argv: %v, want one", root, arg, found)
	}
	return found[0]
}
