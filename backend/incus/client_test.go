package incus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// fakeIncusd serves a handler on a unix socket, like incusd, for tests of the client's
// plumbing that need no daemon.
func fakeIncusd(t *testing.T, h http.Handler) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "unix.socket")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return New(sock)
}

func reply(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func asyncOp(id string) map[string]any {
	return map[string]any{"type": "async", "status": "Operation created", "status_code": 100,
		"operation": "/1.0/operations/" + id,
		"metadata":  map[string]any{"id": id, "status": "Running", "status_code": 103, "may_cancel": true}}
}

func TestWaitOperationCancelsOnContextEnd(t *testing.T) {
	var mu sync.Mutex
	var deleted []string
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /1.0/instances/slow/state", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusAccepted, asyncOp("op1"))
	})
	mux.HandleFunc("GET /1.0/operations/op1/wait", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("timeout") == "" {
			t.Error("wait without a timeout")
		}
		<-r.Context().Done() // never finishes on its own
	})
	mux.HandleFunc("DELETE /1.0/operations/op1", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deleted = append(deleted, "op1")
		mu.Unlock()
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200})
	})
	c := fakeIncusd(t, mux)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Start(ctx, "slow")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if !strings.Contains(err.Error(), `"slow"`) {
		t.Errorf("error does not name the instance: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %s", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deleted) != 1 {
		t.Errorf("operation not cancelled: %v", deleted)
	}
}

func TestErrorsCarryTheAPIText(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances/gone", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusNotFound, map[string]any{"type": "error", "error": "Instance not found", "error_code": 404})
	})
	mux.HandleFunc("DELETE /1.0/instances/busy", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusAccepted, asyncOp("op2"))
	})
	mux.HandleFunc("GET /1.0/operations/op2/wait", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"id": "op2", "status": "Failure", "status_code": 400,
				"err": "Instance is running"}})
	})
	c := fakeIncusd(t, mux)
	ctx := context.Background()

	_, _, err := c.Instance(ctx, "gone")
	if !IsNotFound(err) || err.Error() != `instance "gone": Instance not found` {
		t.Errorf("get: %v", err)
	}
	err = c.Delete(ctx, "busy")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || err.Error() != `delete instance "busy": Instance is running` {
		t.Errorf("failed operation: %v", err)
	}
	if err := c.Delete(ctx, "bad_name"); err == nil || !strings.Contains(err.Error(), "invalid box name") {
		t.Errorf("name not validated before the call: %v", err)
	}
}

func TestNoDaemon(t *testing.T) {
	c := New(filepath.Join(t.TempDir(), "missing.socket"))
	_, err := c.ListInstances(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is incusd running?") {
		t.Errorf("err = %v", err)
	}
}

// TestResetMachineID: the file API request, headers and all (the live test in
// cmd/box proves incusd takes it on a stopped container).
func TestResetMachineID(t *testing.T) {
	var got *http.Request
	var body []byte
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances/b/files", func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200})
	})
	mux.HandleFunc("POST /1.0/instances/gone/files", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusNotFound, map[string]any{"type": "error", "error": "Instance not found", "error_code": 404})
	})
	mux.HandleFunc("DELETE /1.0/instances/b/files", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusNotFound, map[string]any{"type": "error", "error": "Not found", "error_code": 404})
	})
	// d keeps the dbus copy: it is deleted, then made a symlink to /etc/machine-id.
	var dCalls []string
	mux.HandleFunc("DELETE /1.0/instances/d/files", func(w http.ResponseWriter, r *http.Request) {
		dCalls = append(dCalls, "DELETE "+r.URL.Query().Get("path"))
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200})
	})
	mux.HandleFunc("POST /1.0/instances/d/files", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		dCalls = append(dCalls, fmt.Sprintf("POST %s %s %q", r.URL.Query().Get("path"), r.Header.Get("X-Incus-type"), b))
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200})
	})
	c := fakeIncusd(t, mux)
	if err := c.ResetMachineID(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	if err := c.ResetMachineID(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	want := []string{`POST /etc/machine-id file ""`, "DELETE /var/lib/dbus/machine-id", `POST /var/lib/dbus/machine-id symlink "/etc/machine-id"`}
	if !reflect.DeepEqual(dCalls, want) {
		t.Errorf("with a dbus copy: %q\nwant %q", dCalls, want)
	}
	if got.URL.Query().Get("path") != "/etc/machine-id" || len(body) != 0 {
		t.Errorf("path %q, body %q", got.URL.Query().Get("path"), body)
	}
	for k, v := range map[string]string{"X-Incus-type": "file", "X-Incus-write": "overwrite", "X-Incus-uid": "0",
		"X-Incus-gid": "0", "X-Incus-mode": "0444", "Content-Type": "application/octet-stream"} {
		if got.Header.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, got.Header.Get(k), v)
		}
	}
	if err := c.ResetMachineID(context.Background(), "gone"); err == nil || !strings.Contains(err.Error(), `instance "gone": write /etc/machine-id`) {
		t.Errorf("error: %v", err)
	}
	if err := c.WriteFile(context.Background(), "b", "etc/../x", nil, 0, 0, 0o644); err == nil {
		t.Error("a relative path was sent")
	}
}

// incusd answers a wait that outlasts its timeout with an error, though the operation
// still runs (a long backup): the client asks for the operation and waits on, and the
// operation's own end decides.
func TestWaitOperationOutlastsAWaitTimeout(t *testing.T) {
	var mu sync.Mutex
	waits := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances/big/backups", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusAccepted, asyncOp("op3"))
	})
	mux.HandleFunc("GET /1.0/operations/op3/wait", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		waits++
		n := waits
		mu.Unlock()
		if n < 3 {
			reply(w, http.StatusInternalServerError, map[string]any{"type": "error", "error": "context deadline exceeded", "error_code": 500})
			return
		}
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"id": "op3", "status": "Success", "status_code": 200}})
	})
	mux.HandleFunc("GET /1.0/operations/op3", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"id": "op3", "status": "Running", "status_code": 103}})
	})
	c := fakeIncusd(t, mux)
	if err := c.CreateBackup(context.Background(), "big", BackupsPost{Name: "b"}); err != nil {
		t.Fatalf("a long operation failed on a wait time-out: %v", err)
	}
	if waits != 3 {
		t.Errorf("waited %d times, want 3", waits)
	}
}

// A daemon that closes each connection without answering (incus-user, to a revoked
// user) is ErrHungUp, whichever way Go's transport notices it: EOF after the request,
// or "server closed idle connection" before it is written (seen under CI's load).
func TestHungUpIsTyped(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hangup.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	testenv.AcceptAndClose(ln)
	c := New(sock)
	for i := 0; i < 500; i++ {
		_, err := c.Server(context.Background())
		if !errors.Is(err, ErrHungUp) {
			t.Fatalf("request %d: %v, want ErrHungUp", i, err)
		}
	}
}

// The hang-up the transport meets on writing (the daemon closed before the request went
// out: EPIPE, which a CI run met), before any byte of answer, is one; after an answer
// began, a failed write is not.
func TestHungUpOnWrite(t *testing.T) {
	for _, answered := range []bool{false, true} {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fds[0]), "client")
		conn, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		h := &hangUp{}
		w := &watchedConn{Conn: conn, h: h}
		if answered {
			syscall.Write(fds[1], []byte("H"))
			if _, err := w.Read(make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
		}
		syscall.Close(fds[1]) // the daemon hangs up
		if _, err := w.Write([]byte("GET /1.0 HTTP/1.1\r\n\r\n")); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write after the peer closed: %v, want EPIPE", err)
		}
		if h.seen.Load() == answered {
			t.Errorf("answered %v: hung up seen %v", answered, h.seen.Load())
		}
	}
}

// A file push the daemon hangs up on before answering is made again, once: the second
// connection gets the answer and the file is written (a CI run met such a hang-up in
// the middle of a drill probe's push). A daemon that hangs up on every try still fails
// with ErrHungUp.
func TestWriteFileAgainAfterHangUp(t *testing.T) {
	for _, hangups := range []int{1, 2} {
		sock := filepath.Join(t.TempDir(), "push.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		var pushes atomic.Int32
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if string(body) != "probe" || r.URL.Query().Get("path") != "/root/p" {
				http.Error(w, "bad push", http.StatusBadRequest)
				return
			}
			pushes.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"type":"sync","status":"Success","status_code":200,"metadata":{}}`)
		})}
		go srv.Serve(&hangUpFirst{Listener: ln, left: hangups})
		err = New(sock).WriteFile(context.Background(), "b", "/root/p", []byte("probe"), 0, 0, 0o644)
		srv.Close()
		switch {
		case hangups == 1 && (err != nil || pushes.Load() != 1):
			t.Errorf("one hang-up: %v, %d pushes answered; want the file written on the second try", err, pushes.Load())
		case hangups == 2 && !errors.Is(err, ErrHungUp):
			t.Errorf("two hang-ups: %v, want ErrHungUp", err)
		}
	}
}

// hangUpFirst closes the first left connections it accepts unread, as a daemon that
// hangs up does.
type hangUpFirst struct {
	net.Listener
	left int
}

func (l *hangUpFirst) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.left == 0 {
			return c, err
		}
		l.left--
		c.Close()
	}
}
