package testenv

import (
	"os/exec"
	"os/user"
	"strconv"
	"testing"
)

// NamedUser is User for another unprivileged test account (for tests that need two
// users, e.g. box grant's): created when missing, idempotently.
func NamedUser(t testing.TB, name string) (uid, gid int) {
	t.Helper()
	RequireRoot(t)
	u, err := user.Lookup(name)
	if err != nil {
		out, aerr := useradd(name)
		if u, err = user.Lookup(name); err != nil { // another package may have made it meanwhile
			t.Fatalf("useradd %s: %v: %s", name, aerr, out)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// Group returns the gid of a test group, creating it when missing, idempotently.
func Group(t testing.TB, name string) int {
	t.Helper()
	RequireRoot(t)
	g, err := user.LookupGroup(name)
	if err != nil {
		out, aerr := exec.Command("groupadd", name).CombinedOutput()
		if g, err = user.LookupGroup(name); err != nil {
			t.Fatalf("groupadd %s: %v: %s", name, aerr, out)
		}
	}
	gid, _ := strconv.Atoi(g.Gid)
	return gid
}

// useradd makes a test account without subordinate ids: no test needs them (bwrap maps
// one id; incusd maps containers from root's range), and where root's range covers most
// of useradd's span (this lab's incus setup) each account took one of the dozen slots
// left, until useradd failed with "Can't get unique subordinate UID range".
func useradd(name string) ([]byte, error) {
	return exec.Command("useradd", "--create-home", "--shell", "/bin/sh",
		"-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0", name).CombinedOutput()
}
