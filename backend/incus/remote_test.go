package incus

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// tlsIncusd is an HTTPS server standing in for a remote incusd: it demands a client
// certificate and answers only the one it was told to trust.
func tlsIncusd(t *testing.T, trusted []byte, h http.Handler) *httptest.Server {
	t.Helper()
	blk, _ := pem.Decode(trusted)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 || !bytes.Equal(r.TLS.PeerCertificates[0].Raw, blk.Bytes) {
			reply(w, http.StatusForbidden, map[string]any{"type": "error", "error": "not authorized", "error_code": 403})
			return
		}
		h.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func serverPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// remoteConf writes an incus client configuration naming srv as remote "lab".
func remoteConf(t *testing.T, srv *httptest.Server, cert, key, pinned []byte, project string) string {
	t.Helper()
	dir := t.TempDir()
	cc := ClientConfig{Remotes: map[string]RemoteSpec{"lab": {Addr: srv.URL, Project: project, ServerCertPEM: pinned}}, CertPEM: cert, KeyPEM: key}
	if err := cc.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRemoteHTTPSListOneRequestWithProjectAndTarget(t *testing.T) {
	cert, key, err := NewClientCert("box-test")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	var gotProject, gotTarget string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.0/instances", func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		gotProject = r.URL.Query().Get("project")
		if r.URL.Query().Get("recursion") != "2" {
			t.Errorf("recursion %q, want 2", r.URL.Query().Get("recursion"))
		}
		reply(w, 200, map[string]any{"type": "sync", "metadata": []map[string]any{
			{"name": "a", "status": "Running", "location": "m1", "config": map[string]string{"user.box": "1"},
				"state": map[string]any{"network": map[string]any{"eth0": map[string]any{"addresses": []map[string]string{{"family": "inet", "address": "10.0.0.5", "scope": "global"}}}}}},
			{"name": "b", "status": "Stopped", "location": "m2", "config": map[string]string{}},
		}})
	})
	mux.HandleFunc("POST /1.0/instances", func(w http.ResponseWriter, r *http.Request) {
		gotTarget = r.URL.Query().Get("target")
		reply(w, 200, map[string]any{"type": "sync", "metadata": map[string]any{}})
	})
	srv := tlsIncusd(t, cert, mux)
	dir := remoteConf(t, srv, cert, key, serverPEM(srv), "team")
	r, err := LoadRemote(dir, "lab")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewRemote(r)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ListBoxesFull(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "a" || list[0].Location != "m1" || list[0].State.IPv4("eth0") != "10.0.0.5" {
		t.Errorf("boxes %+v", list)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d list requests, want 1", n)
	}
	if gotProject != "team" {
		t.Errorf("project %q, want the remote's team", gotProject)
	}
	c.Target = "m2"
	if err := c.Create(context.Background(), InstancesPost{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if gotTarget != "m2" {
		t.Errorf("target %q, want m2", gotTarget)
	}
	if c.Where() != "remote lab ("+srv.URL+")" || c.RemoteName() != "lab" || c.Socket() != "" {
		t.Errorf("where %q name %q socket %q", c.Where(), c.RemoteName(), c.Socket())
	}
}

func TestRemoteCertificateMismatchRefusedBeforeAnyRequest(t *testing.T) {
	cert, key, _ := NewClientCert("box-test")
	var requests atomic.Int32
	srv := tlsIncusd(t, cert, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reply(w, 200, map[string]any{"type": "sync", "metadata": []any{}})
	}))
	// A certificate that is not the server's, as if the server had been swapped.
	otherPEM, _, _ := NewClientCert("not-the-server")
	dir := remoteConf(t, srv, cert, key, otherPEM, "")
	r, err := LoadRemote(dir, "lab")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewRemote(r)
	defer c.Close()
	_, err = c.ListInstances(context.Background())
	var m *CertMismatchError
	if !errors.As(err, &m) {
		t.Fatalf("err %v, want a certificate mismatch", err)
	}
	var re *RemoteError
	if !errors.As(err, &re) || re.Remote != "lab" || !strings.Contains(re.Hint(), "incus remote remove lab") {
		t.Errorf("err %#v: want a RemoteError naming lab with the re-accept hint", err)
	}
	if m.Got != Fingerprint(srv.Certificate().Raw) {
		t.Errorf("got fingerprint %s, want the server's", m.Got)
	}
	if requests.Load() != 0 {
		t.Errorf("%d requests reached the refused server", requests.Load())
	}
}

func TestRemoteUntrustedClientAnswers403(t *testing.T) {
	trusted, _, _ := NewClientCert("someone-else")
	cert, key, _ := NewClientCert("box-test")
	srv := tlsIncusd(t, trusted, http.NotFoundHandler())
	r, err := LoadRemote(remoteConf(t, srv, cert, key, serverPEM(srv), ""), "lab")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewRemote(r)
	defer c.Close()
	if _, err := c.ListInstances(context.Background()); !Untrusted(err) {
		t.Errorf("err %v, want untrusted (403)", err)
	}
}

func TestLoadRemoteRefusals(t *testing.T) {
	cert, key, _ := NewClientCert("box-test")
	dir := t.TempDir()
	cc := ClientConfig{Remotes: map[string]RemoteSpec{"lab": {Addr: "https://192.0.2.10:8443"}, "sock": {Addr: "unix:///run/other.socket"}}, CertPEM: cert, KeyPEM: key}
	if err := cc.Write(dir); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		t.Helper()
		if err := writeFileT(filepath.Join(dir, name), s); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := LoadRemote(dir, "local"); err != nil || r.HTTPS() || r.Socket != "" {
		t.Errorf("local: %+v %v, want the default socket", r, err)
	}
	if r, err := LoadRemote(dir, "sock"); err != nil || r.Socket != "/run/other.socket" {
		t.Errorf("sock: %+v %v", r, err)
	}
	if r, err := LoadRemote(dir, "lab"); err != nil || !r.HTTPS() || r.PinnedCert() != "" {
		t.Errorf("lab: %+v %v", r, err)
	}
	for _, tc := range []struct{ name, config, want string }{
		{"nope", "", "no such remote"},
		{"img", "remotes:\n  img:\n    addr: https://images.example\n    protocol: simplestreams\n", "image server"},
		{"oidc", "remotes:\n  oidc:\n    addr: https://192.0.2.1:8443\n    auth_type: oidc\n", "TLS certificate only"},
		{"plain", "remotes:\n  plain:\n    addr: http://192.0.2.1:8443\n", "https:// or unix://"},
		{"a:b", "", "not a remote name"},
	} {
		if tc.config != "" {
			write("config.yml", tc.config)
		}
		_, err := LoadRemote(dir, tc.name)
		var ce *RemoteConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || ce.Hint() == "" {
			t.Errorf("%s: err %v, want a RemoteConfigError with %q and a hint", tc.name, err, tc.want)
		}
	}
	// No client certificate: says how the incus client makes one.
	nocert := t.TempDir()
	_ = ClientConfig{Remotes: map[string]RemoteSpec{"lab": {Addr: "https://192.0.2.10:8443"}}}.Write(nocert)
	_, err := LoadRemote(nocert, "lab")
	var ce *RemoteConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Hint(), "incus remote add lab") {
		t.Errorf("no client cert: %v", err)
	}
}

func writeFileT(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
