package postrun

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// deepDir makes levels directories of name below root, by descriptor (their path is
// longer than PATH_MAX), and returns the last one's open descriptor.
func deepDir(t *testing.T, root, name string, levels int) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < levels; i++ {
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
	}
	return fd
}

// A repository whose path is longer than PATH_MAX (hostile review, session 16): the
// walk opens directories below its 32 held levels by path, and the kernel refuses such
// a path (ENAMETOOLONG); unread took a path it could not even ask access(2) about for
// one nobody can enter and recorded nothing, so the repository and everything below
// were skipped in silence. What the audit cannot reach is a finding.
func TestAuditPathTooLong(t *testing.T) {
	wd := t.TempDir()
	in := Input{Workdir: wd}
	before := Take(in)
	fd := deepDir(t, wd, strings.Repeat("d", 120), 40)
	for _, d := range []string{".git", ".git/objects", ".git/refs"} {
		if err := unix.Mkdirat(fd, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h, err := unix.Openat(fd, ".git/HEAD", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(h, []byte("ref: refs/heads/main\n"))
	unix.Close(h)
	unix.Close(fd)
	after := Take(in)
	r := Audit(before, after, t.TempDir(), time.Now())
	if r.Err() == nil && len(r.Findings) == 0 {
		t.Errorf("a repository below a path longer than PATH_MAX: no finding, no error (unread %v, incomplete %q)", after.Unread, after.Incomplete)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("not neutralised: %v", err)
	}
	for _, f := range r.Findings {
		t.Logf("finding: %s %s ...%s: %s", f.Kind, f.Change, f.Path[len(f.Path)-20:], f.Action)
	}
	// Moved aside: the next snapshot finds nothing there.
	if again := Take(in); len(again.Unread) != 0 || len(again.Repos) != 0 {
		t.Errorf("after the audit: unread %d, repositories %d", len(again.Unread), len(again.Repos))
	}
}
