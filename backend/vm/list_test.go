package vm

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
)

// requestLog records the requests a fake incusd answered, in order.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.seen...)
	sort.Strings(out)
	return out
}

func fakeBackend(t *testing.T, h http.Handler) (Backend, *requestLog) {
	log := &requestLog{}
	sock := incusdFake(t, log.wrap(h))
	return Backend{
		Client:  func() *incus.Client { return incus.New(sock) },
		Context: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
		Getenv:  func(string) string { return "" },
		Socket:  sock,
	}, log
}

func eth0(addr string) map[string]any {
	return map[string]any{"network": map[string]any{"eth0": map[string]any{"addresses": []map[string]string{
		{"family": "inet6", "address": "fe80::1", "scope": "link"},
		{"family": "inet", "address": addr, "scope": "global"}}}}, "status": "Running"}
}

var boxCfg = map[string]string{incus.KeyBox: "1", incus.KeyUser: "dev", incus.KeyTemplate: "blank"}

// box list is one request carrying every box's state, filtered by incusd to box's
// tags; the client still decides what a box is.
func TestListIsOneRequest(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("recursion") != "2" || q.Get("filter") != incus.BoxFilter {
			t.Errorf("list query %q, want recursion=2 and the box filter", r.URL.RawQuery)
		}
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": []map[string]any{
			{"name": "b", "status": "Stopped", "type": "container", "config": boxCfg, "state": map[string]any{"status": "Stopped"}},
			{"name": "a", "status": "Running", "type": "container", "config": boxCfg, "state": eth0("10.0.0.5")},
			// a server without filtering answers every instance: not a box, not listed
			{"name": "other", "status": "Running", "type": "container", "config": map[string]string{}, "state": eth0("10.0.0.9")},
		}})
	})
	b, log := fakeBackend(t, mux)
	list, err := b.List()
	if err != nil {
		t.Fatal(err)
	}
	got := []backend.Summary{}
	for _, s := range list {
		got = append(got, backend.Summary{Name: s.Name, State: s.State, IPv4: s.IPv4})
	}
	want := []backend.Summary{{Name: "a", State: "Running", IPv4: "10.0.0.5"}, {Name: "b", State: "Stopped"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("list %+v, want %+v", got, want)
	}
	if seen := log.all(); !reflect.DeepEqual(seen, []string{"GET /1.0/instances"}) {
		t.Errorf("requests %q, want the one list", seen)
	}
}

// Where the list's answer lacks a field, and only there, box asks: an instance incusd
// could not render in full (a bare Error entry) is read alone and, a running box, its
// state; a running box whose state has no address gets it from the leases.
func TestListFallsBackWhereAFieldIsMissing(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": []map[string]any{
			{"name": "broken", "status": "Error"},
			{"name": "vm", "status": "Running", "type": "virtual-machine", "config": boxCfg, "state": map[string]any{"status": "Running"}},
			{"name": "ok", "status": "Running", "type": "container", "config": boxCfg, "state": eth0("10.0.0.5")},
		}})
	})
	mux.HandleFunc("GET /1.0/instances/broken", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": map[string]any{"name": "broken", "status": "Running", "type": "container", "config": boxCfg}})
	})
	mux.HandleFunc("GET /1.0/instances/broken/state", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": eth0("10.0.0.7")})
	})
	mux.HandleFunc("GET /1.0/profiles/", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": map[string]any{"name": "p",
			"devices": map[string]any{"eth0": map[string]string{"type": "nic", "network": "boxbr0"}}}})
	})
	mux.HandleFunc("GET /1.0/networks/boxbr0/leases", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": []map[string]string{{"hostname": "vm", "address": "10.0.0.8"}}})
	})
	b, log := fakeBackend(t, mux)
	list, err := b.List()
	if err != nil {
		t.Fatal(err)
	}
	ips := map[string]string{}
	for _, s := range list {
		ips[s.Name] = s.IPv4
	}
	if want := map[string]string{"broken": "10.0.0.7", "vm": "10.0.0.8", "ok": "10.0.0.5"}; !reflect.DeepEqual(ips, want) {
		t.Errorf("addresses %v, want %v", ips, want)
	}
	seen := log.all()
	want := []string{"GET /1.0/instances", "GET /1.0/instances/broken", "GET /1.0/instances/broken/state", "GET /1.0/networks/boxbr0/leases", "GET /1.0/profiles/" + Placement(b.Getenv)}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("requests %q, want %q", seen, want)
	}
}

// box info is one request (the instance with its state and snapshots); a server that
// answers the bare instance (no state) is asked for state and snapshots.
func TestInfoIsOneRequest(t *testing.T) {
	full := true
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances/a", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("recursion") != "1" {
			t.Errorf("info query %q, want recursion=1", r.URL.RawQuery)
		}
		inst := map[string]any{"name": "a", "status": "Running", "type": "container", "config": boxCfg}
		if full {
			inst["state"] = eth0("10.0.0.5")
			inst["snapshots"] = []map[string]any{{"name": "pristine", "created_at": "2026-07-14T09:30:00Z"}}
		}
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": inst})
	})
	mux.HandleFunc("GET /1.0/instances/a/state", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": eth0("10.0.0.5")})
	})
	mux.HandleFunc("GET /1.0/instances/a/snapshots", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": []map[string]any{{"name": "pristine", "created_at": "2026-07-14T09:30:00Z"}}})
	})
	mux.HandleFunc("GET /1.0/instances/x", func(w http.ResponseWriter, r *http.Request) {
		incusdAnswer(w, 200, map[string]any{"type": "sync", "metadata": map[string]any{"name": "x", "status": "Running", "config": map[string]string{}, "state": eth0("10.0.0.9")}})
	})
	b, log := fakeBackend(t, mux)
	one, err := b.Info("a")
	if err != nil {
		t.Fatal(err)
	}
	if seen := log.all(); !reflect.DeepEqual(seen, []string{"GET /1.0/instances/a"}) {
		t.Errorf("requests %q, want the one instance request", seen)
	}
	full = false
	b2, log2 := fakeBackend(t, mux)
	two, err := b2.Info("a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, two) || one.IPv4 != "10.0.0.5" || len(one.Snapshots) != 1 || one.Snapshots[0].Name != "pristine" {
		t.Errorf("info from one request %+v, from three %+v", one, two)
	}
	if seen := log2.all(); len(seen) != 3 {
		t.Errorf("requests %q, want the instance, its state, its snapshots", seen)
	}
	var nb *NotBoxError
	if _, err := b.Info("x"); err == nil || !strings.Contains(err.Error(), "not a box") || !asNotBox(err, &nb) {
		t.Errorf("info of a non-box: %v", err)
	}
}

func asNotBox(err error, target **NotBoxError) bool { return errors.As(err, target) }
