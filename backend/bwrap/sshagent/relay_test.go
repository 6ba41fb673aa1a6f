package sshagent

import (
	"io"
	"net"
	"path/filepath"
	"testing"
)

// Relay passes each connection's bytes both ways to a fresh upstream connection, and
// returns when its listener is closed.
func TestRelay(t *testing.T) {
	dir := t.TempDir()
	up, err := net.Listen("unix", filepath.Join(dir, "up"))
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }() // an echo
		}
	}()
	ln, err := net.Listen("unix", filepath.Join(dir, "relay"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { Relay(ln, filepath.Join(dir, "up")); close(done) }()
	for _, msg := range []string{"one", "two"} {
		c, err := net.Dial("unix", filepath.Join(dir, "relay"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
			t.Errorf("through the relay: %q, %v; want %q", buf, err, msg)
		}
		c.Close()
	}
	ln.Close()
	<-done
}
