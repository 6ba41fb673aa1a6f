package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
)

// incusdFake serves h on a unix socket, like incusd, and returns its path.
func incusdFake(t *testing.T, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "unix.socket")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func incusdAnswer(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

var (
	syncOK       = map[string]any{"type": "sync", "status": "Success", "status_code": 200}
	agentDown    = map[string]any{"type": "error", "error": "VM agent isn't currently running", "error_code": 500}
	instNotFound = map[string]any{"type": "error", "error": "Instance not found", "error_code": 404}
)

// TestResetVMMachineIDWaitsForTheAgent: incusd's "agent not running" is asked again
// until the agent answers; any other answer (a box whose name says agent, gone) ends it.
func TestResetVMMachineIDWaitsForTheAgent(t *testing.T) {
	var writes, gone, states atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances/v/files", func(w http.ResponseWriter, r *http.Request) {
		if writes.Add(1) <= 2 {
			incusdAnswer(w, 500, agentDown)
			return
		}
		incusdAnswer(w, 200, syncOK)
	})
	mux.HandleFunc("DELETE /1.0/instances/v/files", func(w http.ResponseWriter, r *http.Request) { incusdAnswer(w, 404, instNotFound) })
	mux.HandleFunc("PUT /1.0/instances/v/state", func(w http.ResponseWriter, r *http.Request) {
		states.Add(1)
		incusdAnswer(w, 200, syncOK)
	})
	mux.HandleFunc("POST /1.0/instances/agent1/files", func(w http.ResponseWriter, r *http.Request) {
		gone.Add(1)
		incusdAnswer(w, 404, instNotFound)
	})
	c := incus.New(incusdFake(t, mux))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ResetVMMachineID(ctx, c, "v"); err != nil {
		t.Fatal(err)
	}
	if writes.Load() != 3 || states.Load() != 2 {
		t.Errorf("writes %d (want 3: twice refused, then done), state changes %d (want stop, start)", writes.Load(), states.Load())
	}
	err := ResetVMMachineID(ctx, c, "agent1")
	if !incus.IsNotFound(err) || gone.Load() != 1 {
		t.Errorf("missing box named agent1: %v after %d tries, want not found after 1", err, gone.Load())
	}
}

// TestWaitCloudInitAsksAgainWhileTheAgentIsDown: the same for the cloud-init wait's exec.
func TestWaitCloudInitAsksAgainWhileTheAgentIsDown(t *testing.T) {
	var execs atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances/v/exec", func(w http.ResponseWriter, r *http.Request) {
		if execs.Add(1) == 1 {
			incusdAnswer(w, 500, agentDown)
			return
		}
		incusdAnswer(w, 400, map[string]any{"type": "error", "error": "Instance is not running", "error_code": 400})
	})
	c := incus.New(incusdFake(t, mux))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := waitCloudInit(ctx, c, "v")
	if err == nil || err.Error() != `exec "cloud-init" in instance "v": Instance is not running` || execs.Load() != 2 {
		t.Errorf("%v after %d execs; want the second answer after 2", err, execs.Load())
	}
}

// TestSnapshotTakenMeanwhile: a label taken between the check and the snapshot (incusd
// says so inside the operation, in the database's words) is the same refusal as one
// taken before.
func TestSnapshotTakenMeanwhile(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances/b", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"name": "b", "config": map[string]string{incus.KeyBox: "1"}}})
	})
	mux.HandleFunc("GET /1.0/instances/b/snapshots", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "status": "Success", "status_code": 200, "metadata": []any{}})
	})
	mux.HandleFunc("POST /1.0/instances/b/snapshots", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 202, map[string]any{"type": "async", "status": "Operation created", "status_code": 100,
			"operation": "/1.0/operations/s", "metadata": map[string]any{"id": "s", "status": "Running", "status_code": 103}})
	})
	mux.HandleFunc("GET /1.0/operations/s/wait", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"id": "s", "status": "Failure", "status_code": 400,
				"err": "UNIQUE constraint failed: instances_snapshots.instance_id, instances_snapshots.name"}})
	})
	sock := incusdFake(t, mux)
	var stdout bytes.Buffer
	b := Backend{
		Client: func() *incus.Client { return incus.New(sock) },
		Context: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 10*time.Second)
		},
		Stdout: &stdout, Stderr: &bytes.Buffer{}, Quiet: true,
	}
	label, err := b.Snapshot("b", "l")
	if label != "" || err == nil || err.Error() != `box "b" already has a snapshot "l"` || stdout.Len() != 0 {
		t.Errorf("%q, %v, stdout %q", label, err, stdout.String())
	}
	var apiErr *incus.Error
	if errors.As(err, &apiErr) {
		t.Errorf("incusd's text leaks: %v", apiErr)
	}
}

// How asking incusd failed, classified for the CLI: a network error or a missing or
// refusing socket is Unreached (before EACCES: a dial refused by permissions is still a
// dial), EACCES Denied, a cancelled context Interrupted, anything else not a transport
// failure.
func TestFailureOf(t *testing.T) {
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "unix", Err: err} }
	for _, tc := range []struct {
		err  error
		want Failure
	}{
		{fmt.Errorf("get: %w", &os.PathError{Op: "dial", Path: "/x", Err: syscall.ENOENT}), Unreached},
		{fmt.Errorf("get: %w", syscall.ECONNREFUSED), Unreached},
		{dial(syscall.EACCES), Unreached},
		{fmt.Errorf("get: %w", syscall.EACCES), Denied},
		{fmt.Errorf("wait: %w", context.Canceled), Interrupted},
		{errors.New("not found"), NotTransport},
		{nil, NotTransport},
	} {
		if got := FailureOf(tc.err); got != tc.want {
			t.Errorf("%v: %d, want %d", tc.err, got, tc.want)
		}
	}
}
