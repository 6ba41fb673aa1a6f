package vm

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

// Completions offers the boxes (never an instance box did not mint) whose names start
// with the prefix, each with its status; no daemon completes nothing.
func TestCompletions(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "status": "Success", "status_code": 200, "metadata": []map[string]any{
			{"name": "work", "status": "Running", "config": map[string]string{"user.box": "1"}},
			{"name": "web", "status": "Stopped", "config": map[string]string{"user.claudebox": "1"}},
			{"name": "wiki", "status": "Running", "config": map[string]string{}},
			{"name": "play", "status": "Running", "config": map[string]string{"user.box": "1"}},
		}})
	})
	sock := incusdFake(t, mux)
	d := Daemon{Socket: sock, Local: func() *incus.Client { return incus.New(sock) }}
	if got := fmt.Sprint(d.Completions("w")); got != "[{work Running} {web Stopped}]" {
		t.Errorf("Completions(w) = %s, want work (Running) and web (Stopped), not wiki", got)
	}
	gone := filepath.Join(t.TempDir(), "unix.socket")
	d = Daemon{Socket: gone, Local: func() *incus.Client { return incus.New(gone) }}
	if got := d.Completions(""); got != nil {
		t.Errorf("no daemon: %v, want nothing", got)
	}
}
