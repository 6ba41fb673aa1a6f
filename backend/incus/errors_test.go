package incus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// failOp answers an operation's wait with a failure carrying incusd's text (a failed
// operation's status is always 400, whatever the cause).
func failOp(mux *http.ServeMux, id, msg string) {
	mux.HandleFunc("GET /1.0/operations/"+id+"/wait", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"id": id, "status": "Failure", "status_code": 400, "err": msg}})
	})
}

// TestErrorClassification: each case incusd tells only in text is matched on the API's
// own message, through any wrapping, and never on box's wrapping (which names the
// instance: a box named agent1 is not an agent that is down).
func TestErrorClassification(t *testing.T) {
	api := func(status int, msg string) error {
		return fmt.Errorf("exec %q in instance %q: %w", "true", "b", &Error{Status: status, Message: msg})
	}
	for _, tc := range []struct {
		err    error
		target error
		want   bool
	}{
		{api(400, "VM agent isn't currently running"), ErrAgentNotRunning, true},
		{api(500, "Failed to connect to the agent"), ErrAgentNotRunning, true},
		{api(400, "Failed connecting to agent: dial vsock: no such device"), ErrAgentNotRunning, true},
		{api(400, "Instance is not running"), ErrAgentNotRunning, false},
		{fmt.Errorf("instance %q: %w", "agent1", &Error{Status: 404, Message: "Instance not found"}), ErrAgentNotRunning, false},
		{errors.New("incus socket /x: agent: connection refused"), ErrAgentNotRunning, false}, // not incusd's answer
		{api(400, "Image with same fingerprint already exists"), ErrImageExists, true},
		{api(409, "Image alias already exists"), ErrImageExists, false}, // a 409 alone is no whole upload
		{api(400, "UNIQUE constraint failed: instances_snapshots.instance_id, instances_snapshots.name"), ErrExists, true},
		{api(409, "This \"Instance_snapshot\" entry already exists"), ErrExists, true},
		{api(400, "Instance is busy running a backup_create operation"), ErrExists, false},
		{api(400, "Image with same fingerprint already exists"), ErrExists, false},
		{api(400, "Command not found"), ErrCommandNotFound, true},
		{api(400, "Command not found: foo"), ErrCommandNotFound, false},
		{api(404, "Instance not found"), ErrCommandNotFound, false},
	} {
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%q, %v) = %v, want %v", tc.err, tc.target, got, tc.want)
		}
	}
	// The text stays incusd's.
	if err := api(400, "VM agent isn't currently running"); err.Error() != `exec "true" in instance "b": VM agent isn't currently running` {
		t.Errorf("text: %q", err)
	}
}

// TestImportImageSameFingerprint: an upload incusd refuses as a duplicate is the image
// already there: its fingerprint is the hash of what was sent, and the aliases are set.
func TestImportImageSameFingerprint(t *testing.T) {
	dir := t.TempDir()
	meta, rootfs := filepath.Join(dir, "meta.tar"), filepath.Join(dir, "rootfs.squashfs")
	os.WriteFile(meta, []byte("metadata"), 0o644)
	os.WriteFile(rootfs, []byte("rootfs"), 0o644)
	sum := sha256.Sum256([]byte("metadatarootfs"))
	want := hex.EncodeToString(sum[:])

	var aliased []string
	answer := "Image with same fingerprint already exists"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/images", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // incusd reads the whole upload first
		reply(w, http.StatusAccepted, asyncOp("img"))
	})
	mux.HandleFunc("GET /1.0/operations/img/wait", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200,
			"metadata": map[string]any{"id": "img", "status": "Failure", "status_code": 400, "err": answer}})
	})
	mux.HandleFunc("POST /1.0/images/aliases", func(w http.ResponseWriter, r *http.Request) {
		aliased = append(aliased, r.URL.Path)
		reply(w, http.StatusOK, map[string]any{"type": "sync", "status": "Success", "status_code": 200})
	})
	c := fakeIncusd(t, mux)
	fp, err := c.ImportImage(context.Background(), meta, rootfs, "box/test")
	if err != nil || fp != want {
		t.Fatalf("duplicate upload: %q, %v; want %q", fp, err, want)
	}
	if len(aliased) != 1 {
		t.Errorf("aliases set: %d, want 1", len(aliased))
	}

	answer = "Failed to unpack the image"
	if fp, err := c.ImportImage(context.Background(), meta, rootfs, "box/test"); err == nil || fp != "" ||
		err.Error() != "import image "+rootfs+": Failed to unpack the image" {
		t.Errorf("failed upload: %q, %v", fp, err)
	}
}

// TestCreateSnapshotExists: a snapshot name taken is ErrExists whether incusd says so
// with a 409 or, from inside the operation, in the database's words.
func TestCreateSnapshotExists(t *testing.T) {
	mux := http.NewServeMux()
	for inst, op := range map[string]string{"b": "s1", "d": "s2"} {
		mux.HandleFunc("POST /1.0/instances/"+inst+"/snapshots", func(w http.ResponseWriter, r *http.Request) {
			reply(w, http.StatusAccepted, asyncOp(op))
		})
	}
	failOp(mux, "s1", "UNIQUE constraint failed: instances_snapshots.instance_id, instances_snapshots.name")
	failOp(mux, "s2", "Instance is busy")
	mux.HandleFunc("POST /1.0/instances/c/snapshots", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusConflict, map[string]any{"type": "error", "error": "Snapshot already exists", "error_code": 409})
	})
	c := fakeIncusd(t, mux)
	ctx := context.Background()
	err := c.CreateSnapshot(ctx, "b", SnapshotPost{Name: "l"})
	if !errors.Is(err, ErrExists) || err.Error() != `snapshot "l" of instance "b": UNIQUE constraint failed: instances_snapshots.instance_id, instances_snapshots.name` {
		t.Errorf("taken, in the operation: %v", err)
	}
	if err := c.CreateSnapshot(ctx, "c", SnapshotPost{Name: "l"}); !errors.Is(err, ErrExists) {
		t.Errorf("taken, a 409: %v", err)
	}
	if err := c.CreateSnapshot(ctx, "d", SnapshotPost{Name: "l"}); err == nil || errors.Is(err, ErrExists) {
		t.Errorf("another failure: %v", err)
	}
}

// TestAgentNotRunningThroughTheClient: the agent's absence, answered to a file write or
// an exec, reaches the caller as ErrAgentNotRunning; a missing instance named like it
// does not.
func TestAgentNotRunningThroughTheClient(t *testing.T) {
	down := map[string]any{"type": "error", "error": "VM agent isn't currently running", "error_code": 500}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /1.0/instances/v/files", func(w http.ResponseWriter, r *http.Request) { reply(w, 500, down) })
	mux.HandleFunc("POST /1.0/instances/v/exec", func(w http.ResponseWriter, r *http.Request) { reply(w, 500, down) })
	mux.HandleFunc("POST /1.0/instances/agent1/files", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusNotFound, map[string]any{"type": "error", "error": "Instance not found", "error_code": 404})
	})
	c := fakeIncusd(t, mux)
	ctx := context.Background()
	if err := c.ResetMachineID(ctx, "v"); !errors.Is(err, ErrAgentNotRunning) {
		t.Errorf("file write: %v", err)
	}
	if code, err := c.Exec(ctx, "v", Exec{Command: []string{"true"}}); code != -1 || !errors.Is(err, ErrAgentNotRunning) {
		t.Errorf("exec: %d, %v", code, err)
	}
	if err := c.ResetMachineID(ctx, "agent1"); err == nil || errors.Is(err, ErrAgentNotRunning) {
		t.Errorf("missing instance: %v", err)
	}
}
