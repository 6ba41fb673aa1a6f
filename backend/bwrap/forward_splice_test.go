package bwrap

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// pipe carries both directions byte for byte with its raw splices, larger than the pipe
// and the sockets' buffers, and passes each half-close on: the client's end of request
// reaches the server (which answers only then), the server's close ends the client's
// read. Real TCP sockets in a lab namespace, as the forwarder holds them.
func TestPipeSplicesBothWays(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range lab.Tools {
		testenv.RequireTool(t, tool)
	}
	l := lab.New(t)
	pattern := func(n, seed int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i/4093 + seed)
		}
		return b
	}
	request, answer := pattern(3<<20+17, 1), pattern(24<<20+5, 2)
	server, err := lab.Listen(l.HostNS(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	front, err := lab.Listen(l.HostNS(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	served := make(chan error, 1)
	go func() {
		c, err := server.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		got, err := io.ReadAll(c) // to the client's half-close, passed on by pipe
		if err == nil && !bytes.Equal(got, request) {
			err = io.ErrUnexpectedEOF
			t.Errorf("the server got %d bytes, want the %d of the request, equal", len(got), len(request))
		}
		if err == nil {
			_, err = c.Write(answer)
		}
		served <- err
	}()
	go func() {
		c, err := front.Accept()
		if err != nil {
			return
		}
		d, err := lab.Dialer(l.HostNS())(t.Context(), "tcp4", server.Addr().String())
		if err != nil {
			c.Close()
			return
		}
		pipe(c, d)
		c.Close()
		d.Close()
	}()
	c, err := lab.Dialer(l.HostNS())(t.Context(), "tcp4", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(request); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("server: %v", err)
	}
	if !bytes.Equal(got, answer) {
		t.Errorf("the client got %d bytes, want the %d of the answer, equal", len(got), len(answer))
	}
}
