package inet

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/acceptloop"
	"golang.org/x/sys/unix"
)

// countingListener counts the accepts that failed for want of descriptors.
type countingListener struct {
	net.Listener
	exhausted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if acceptloop.Exhausted(err) {
		l.exhausted.Add(1)
	}
	return c, err
}

// TestProxyBacksOffWhenOutOfDescriptors: with box's descriptors used up (the sandbox's
// connections and their upstream halves) and connections waiting, accept fails with
// EMFILE for real; the proxy waits 5, 10, 20 ms... instead of retrying at once, which
// spun a CPU outside the sandbox's limits (review finding, session 13). Not parallel: it
// lowers the process's descriptor limit for a moment.
func TestProxyBacksOffWhenOutOfDescriptors(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			t.Error(err)
		}
	}()
	raw, err := net.Listen("unix", filepath.Join(t.TempDir(), "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: raw}
	client, err := net.Dial("unix", raw.Addr().String()) // waits in the backlog
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	waits := make(chan time.Duration)
	turn := make(chan struct{})
	p := &Proxy{Allow: NewAllowlist(nil), wait: func(d time.Duration) { waits <- d; <-turn }}

	fds, _ := os.ReadDir("/proc/self/fd")
	low := lim
	low.Cur = uint64(len(fds) + 16)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var filler []int
	release := func() {
		for _, fd := range filler {
			unix.Close(fd)
		}
		filler = nil
	}
	defer release()
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EMFILE) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		filler = append(filler, fd)
	}

	served := make(chan struct{})
	go func() { p.Serve(ln); close(served) }()
	for i, want := range []time.Duration{5, 10, 20} {
		select {
		case got := <-waits:
			if got != want*time.Millisecond {
				t.Fatalf("wait %d: %v, want %v", i+1, got, want*time.Millisecond)
			}
		case <-spinning(ln, served):
			release()
			t.Fatalf("the proxy retried %d accepts that failed for want of descriptors without waiting", ln.exhausted.Load())
		}
		if i < 2 {
			turn <- struct{}{}
		}
	}
	release()
	turn <- struct{}{} // descriptors are back: the waiting connection is accepted
	ln.Close()
	for {
		select {
		case <-served:
			return
		case <-waits: // a last exhausted accept raced the release
			turn <- struct{}{}
		}
	}
}

// spinning is closed once the listener saw far more failed accepts than a back-off
// allows before the test's next turn (or Serve ended).
func spinning(ln *countingListener, served chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for ln.exhausted.Load() < 1000 {
			select {
			case <-served:
				return
			default:
				time.Sleep(time.Millisecond) // polls a counter; asserts nothing about time
			}
		}
	}()
	return ch
}
