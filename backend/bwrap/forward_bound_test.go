package bwrap

import (
	"io"
	"net"
	"path/filepath"
	"testing"
)

// The forwarder carries at most cap(slots) connections at once: one past it is closed at
// once, the ones carried go on, and a slot freed serves the next. A sandbox looping
// connects to host.box.internal held about six descriptors each until box had none
// left for its other doors (a hostile review). Real sockets, serve as box runs it.
func TestForwarderServeBounded(t *testing.T) {
	f := &forwarder{conns: map[net.Conn]bool{}, quit: make(chan struct{}), slots: make(chan struct{}, 3)}
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	f.serve(ln, func(c net.Conn) {
		defer c.Close()
		c.Write([]byte("x"))
		<-release
	})
	t.Cleanup(func() { ln.Close(); close(release); f.wg.Wait() })
	// served: the handler's byte; closed at once: EOF.
	try := func() (net.Conn, bool) {
		c, err := net.Dial("unix", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		_, err = c.Read(b[:])
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		return c, err == nil
	}
	for i := 0; i < 3; i++ {
		c, served := try()
		defer c.Close()
		if !served {
			t.Fatalf("connection %d within the bound was closed", i+1)
		}
	}
	if c, served := try(); served {
		c.Close()
		t.Fatal("connection 4 past the bound was carried")
	}
	release <- struct{}{} // one carried connection ends
	for {
		c, served := try() // its slot comes back once its handler has returned
		defer c.Close()
		if served {
			break
		}
	}
}
