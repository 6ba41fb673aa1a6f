// Package testenv gates tests that need a real kernel feature, a real tool or root.
//
// On a laptop that lacks a feature such a test skips with the reason. Under CI=true a
// skip is a failure: in CI nothing real may be skipped.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CI reports whether the tests run in CI (CI=true), where nothing real may be skipped.
func CI() bool { return os.Getenv("CI") == "true" }

// Skip skips t with reason, or fails it under CI=true.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if CI() {
		t.Fatalf("required in CI but unavailable: %s", reason)
	}
	t.Skip(reason)
}

// RequireRoot skips (fails in CI) unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "requires root")
	}
}

// RequireTool skips (fails in CI) unless name is on PATH, and returns its path.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, "requires "+name+" on PATH")
	}
	return p
}

// UserName is the unprivileged account real sandbox tests run as: BOX_TEST_USER, else
// boxtest-PACKAGE (the test binary's name: drill.test runs as boxtest-drill). Limits
// such as RLIMIT_NPROC count every process of one user, so two runs as one user break
// each other, and go test runs two packages side by side: as one user, the drill's fork
// of 4096 processes left a Landlock-mode run of backend/bwrap's "Cannot fork" (session
// 19). A second machine-wide run names its own BOX_TEST_USER.
var UserName = userName(os.Getenv("BOX_TEST_USER"), os.Args[0])

func userName(env, arg0 string) string {
	if env != "" {
		return env
	}
	pkg, ok := strings.CutSuffix(filepath.Base(arg0), ".test")
	if !ok || pkg == "" || strings.Trim(pkg, "abcdefghijklmnopqrstuvwxyz0123456789") != "" || len(pkg) > 20 {
		return "boxtest"
	}
	return "boxtest-" + pkg
}

// User returns the uid and gid of the unprivileged test account, creating it when the
// tests run as root and it does not exist yet.
func User(t testing.TB) (uid, gid int) {
	t.Helper()
	RequireRoot(t)
	u, err := user.Lookup(UserName)
	if err != nil {
		out, err := useradd(UserName)
		if err != nil {
			// Another test package may have created it meanwhile.
			if u2, err2 := user.Lookup(UserName); err2 == nil {
				u = u2
			} else {
				t.Fatalf("useradd %s: %v: %s", UserName, err, out)
			}
		} else if u, err = user.Lookup(UserName); err != nil {
			t.Fatalf("lookup %s after useradd: %v", UserName, err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// AcceptAndClose serves ln in the background by closing every connection it accepts,
// until ln is closed: a peer whose only answer is that the connect was made.
func AcceptAndClose(ln net.Listener) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}
