package incus

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// incusdListener accepts as incusd's local endpoint does (internal/server/endpoints/
// listeners/starttls.go, Incus 6.0 to now): its Accept, which the HTTP server calls in
// one loop, peeks the first 8 bytes of each connection (is it "STARTTLS"?) before it
// returns. A connection that sends nothing holds that loop: no other connection is
// accepted until it speaks or closes, and every request written meanwhile to a newer
// connection waits in the socket's backlog.
type incusdListener struct {
	net.Listener
	silent  atomic.Int32 // connections that closed without sending a byte
	blocked atomic.Int64 // time the accept loop spent held by them (the server's clock)
}

func (l *incusdListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	start := time.Now()
	if _, err := br.Peek(8); err != nil && br.Buffered() == 0 {
		l.silent.Add(1)
		l.blocked.Add(int64(time.Since(start)))
	}
	return bufferedConn{br, c}, nil
}

type bufferedConn struct {
	r *bufio.Reader
	net.Conn
}

func (b bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// A connection box opens carries a request at once: a connection dialed and left idle
// (Go's transport dials for a request and, when another connection frees up first,
// parks the new one unused in its pool) holds incusd's accept loop until the client
// drops it, 30 s later (issue 26: `box list` stalled 30 s, its last two /state requests
// reaching incusd 30 s after the rest). Many concurrent calls, as `box list` made, must
// leave incusd no silent connection, so no call ever waits behind one.
func TestConcurrentCallsNeverHoldIncusdsAcceptLoop(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "unix.socket")
	inner, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln := &incusdListener{Listener: inner}
	var served atomic.Int32
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			reply(w, 200, map[string]any{"type": "sync", "metadata": map[string]any{"status": "Running"}})
		}),
		IdleTimeout: 30 * time.Second, // incusd's
	}
	go srv.Serve(ln)
	defer srv.Close()

	// Each round is a fresh client, as each `box list` is a fresh process: one call,
	// then a burst of concurrent ones, the shape of the list and its per-box /state
	// calls.
	const rounds, burst = 100, 6
	errs := make(chan error, rounds*(burst+1))
	for r := range rounds {
		c := New(sock)
		if _, err := c.State(context.Background(), "first"); err != nil {
			errs <- err
		}
		var wg sync.WaitGroup
		for i := range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.State(context.Background(), fmt.Sprintf("b%d-%d", r, i)); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		// A silent connection parked in the pool shows up here at the latest.
		c.Close()
	}
	srv.Close()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := served.Load(); n != rounds*(burst+1) {
		t.Errorf("incusd served %d requests, want %d", n, rounds*(burst+1))
	}
	if n := ln.silent.Load(); n != 0 {
		t.Errorf("%d connections reached incusd and sent nothing: each held its accept loop (%s in all, by the server's clock), and every new connection waited behind it",
			n, time.Duration(ln.blocked.Load()).Round(time.Millisecond))
	}
}
