package incus

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestUploadEndsOnContextEndWhileItsSourceStalls: an upload read from a pipe whose
// writer stalls (box import fed by a FIFO, Ctrl-C while the feeder is idle) ends when
// ctx ends. net/http's transport waits for its body-writing goroutine before returning,
// and that goroutine sits in the body's Read: without a cancellable body, the call
// would never return.
func TestUploadEndsOnContextEndWhileItsSourceStalls(t *testing.T) {
	got := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances", func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(r.Body, buf); err == nil {
			close(got)
		}
		_, _ = io.Copy(io.Discard, r.Body) // incusd spools the whole body first
	})
	c := fakeIncusd(t, mux)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close() // held open: the source stalls, it never ends
	if _, err := pw.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.ImportBackup(ctx, pr, "cut", "") }()
	select {
	case <-got:
	case err := <-done:
		t.Fatalf("the upload ended before incusd read from it: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ImportBackup did not return after its context ended: the stalled body read holds it")
	}
}

// TestWaitOperationHonoursContextWhileAskingAfterATimedOutWait: the look at the
// operation after incusd timed out a wait is cut by ctx too, and then the operation is
// cancelled and ctx's error returned (box import says "interrupted", not a socket error).
func TestWaitOperationHonoursContextWhileAskingAfterATimedOutWait(t *testing.T) {
	asked := make(chan struct{})
	deleted := make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances/big/backups", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusAccepted, asyncOp("op4"))
	})
	mux.HandleFunc("GET /1.0/operations/op4/wait", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusInternalServerError, map[string]any{"type": "error", "error": "context deadline exceeded", "error_code": 500})
	})
	mux.HandleFunc("GET /1.0/operations/op4", func(w http.ResponseWriter, r *http.Request) {
		close(asked)
		<-r.Context().Done() // incusd too loaded to answer
	})
	mux.HandleFunc("DELETE /1.0/operations/op4", func(w http.ResponseWriter, r *http.Request) {
		deleted <- struct{}{}
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200})
	})
	c := fakeIncusd(t, mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.CreateBackup(ctx, "big", BackupsPost{Name: "b"}) }()
	<-asked
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("WaitOperation did not return after its context ended")
	}
	select {
	case <-deleted:
	default:
		t.Error("the operation was not cancelled")
	}
}
