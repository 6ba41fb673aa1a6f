package bwrap_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

// A machine without /etc/hosts (an Incus container of a minimal image) or without
// /etc/resolv.conf: the sandbox's own file cannot be bound there (bwrap binds over an
// existing file only, in the host's read-only /etc). --host-port and the allowlist tier
// failed after launch with bwrap's "Can't create file at /etc/hosts: Read-only file
// system" and a generic hint (field review, session 20). box now names the file and how
// to make it, before anything starts. The file is hidden by an overlay on /etc in a
// private mount namespace (a whiteout); the machine's /etc is untouched.
func TestEtcFileMissing(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "unshare")
	w := boxtest.NewWorld(t)
	for _, c := range []struct {
		file string
		args []string
	}{
		{"hosts", []string{"--host-port", "5432"}},
		{"resolv.conf", []string{"--network", "allowlist", "--allow", "example.com"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			o := newEtcOverlay(t, "")
			if err := syscall.Mknod(filepath.Join(o.upper, c.file), syscall.S_IFCHR, 0); err != nil {
				t.Fatal(err)
			}
			r := o.run(w, append(append([]string{"run", "-y"}, c.args...), "--", "true")...)
			t.Logf("exit %d\n%s", r.Code, r.Stderr)
			if r.Code != 125 || !strings.Contains(r.Stderr, "box: error: ") || !strings.Contains(r.Stderr, "/etc/"+c.file+" on this machine, which has none") ||
				!strings.Contains(r.Stderr, "box: hint: create it as root: touch /etc/"+c.file) || strings.Contains(r.Stderr, "bwrap: Can't create") {
				t.Errorf("box run %v without /etc/%s: exit %d\n%s", c.args, c.file, r.Code, r.Stderr)
			}
		})
	}
}
