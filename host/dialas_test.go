package host

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// DialAs switches one OS thread to the grantee's credentials. Its goroutine may run on
// the main thread, which Go cannot retire: a goroutine that ends locked to it leaves it
// parked for good, still switched. The main thread is the one /proc/PID shows, so box
// (root) showed the grantee as its effective uid, and /proc/PID's files were theirs
// (session 12 review). The process must keep its credentials, however many dials and
// from which goroutines.
func TestDialAsLeavesTheProcessItsCredentials(t *testing.T) {
	testenv.RequireRoot(t)
	dir, err := os.MkdirTemp("", "box-dialas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	testenv.AcceptAndClose(ln)
	creds := func() string {
		b, err := os.ReadFile("/proc/self/status") // the main thread's
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") {
				out = append(out, strings.Join(strings.Fields(l), " "))
			}
		}
		return strings.Join(out, "; ")
	}
	before := creds()
	const nobody = 65534
	for i := range 200 {
		// From a fresh goroutine each time, as box grant's steps call it: whichever
		// thread runs it, the main one included, must come back as it was.
		errc := make(chan error, 1)
		go func() {
			c, err := DialAs(sock, nobody, "65534")
			if err == nil {
				c.Close()
			}
			errc <- err
		}()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if got := creds(); got != before {
			t.Fatalf("after %d dials the process's main thread has %s, not %s", i+1, got, before)
		}
	}
}
