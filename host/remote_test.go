package host

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/incus"
)

// fakeRemote answers the three reads RemoteFacts makes, as incusd would, on a unix socket.
func fakeRemote(t *testing.T, eth0Netmask string) *incus.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "incus.socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]any{
		"/1.0": map[string]any{"environment": map[string]any{"addresses": []string{"198.51.100.2:8443", "203.0.113.99:8443"}}},
		"/1.0/networks": []incus.Network{{Name: "eth0", Type: "physical"}, {Name: "lo", Type: "loopback"},
			{Name: BridgeName, Type: "bridge", Managed: true}},
		"/1.0/networks/eth0/state": map[string]any{"addresses": []incus.NetworkAddress{
			{Family: "inet", Address: "198.51.100.2", Netmask: eth0Netmask, Scope: "global"},
			{Family: "inet6", Address: "2001:db8::2", Netmask: "64", Scope: "global"}}},
		"/1.0/networks/lo/state": map[string]any{"addresses": []incus.NetworkAddress{
			{Family: "inet", Address: "127.0.0.1", Netmask: "8", Scope: "local"}}},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		md, ok := answers[r.URL.Path]
		if !ok {
			w.WriteHeader(404)
			json.NewEncoder(w).Encode(map[string]any{"type": "error", "error_code": 404, "error": "not found"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"type": "sync", "status": "Success", "status_code": 200, "metadata": md})
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return incus.New(sock)
}

// TestRemoteFactsSubnets: a remote's interface subnets, read through the API, reach the
// ACL (its LAN, not this machine's); an unreadable netmask is an error, not a LAN left out.
func TestRemoteFactsSubnets(t *testing.T) {
	f, claims, err := RemoteFacts(context.Background(), fakeRemote(t, "24"), BridgeName)
	if err != nil {
		t.Fatal(err)
	}
	want := HostNet{netip.MustParsePrefix("198.51.100.2/24"), "eth0"}
	if !slices.Contains(f.Nets, want) || len(f.Nets) != 1 || len(claims) != 1 {
		t.Errorf("nets %v, claims %v: want only %v", f.Nets, claims, want)
	}
	in := stackInput
	in.HostAddrs, in.HostNets = f.Addrs, f.Nets
	p, err := PlanStack(in)
	if err != nil {
		t.Fatal(err)
	}
	if d := dropped(p.ACL, "198.51.100.10"); len(d) != 1 || d[0] != RuleHostNet+"198.51.100.0/24" {
		t.Errorf("the remote's LAN neighbour dropped by %q", d)
	}
	if d := dropped(p.ACL, "203.0.113.99"); len(d) != 1 || d[0] != RuleHost+"203.0.113.99" {
		t.Errorf("the remote's listen address outside its subnets dropped by %q", d)
	}

	_, _, err = RemoteFacts(context.Background(), fakeRemote(t, "255.255.255.0"), BridgeName)
	if err == nil || !strings.Contains(err.Error(), "eth0") {
		t.Errorf("netmask 255.255.255.0: err %v, want an error naming eth0", err)
	}
	f, _, _ = RemoteFacts(context.Background(), fakeRemote(t, "6"), BridgeName)
	in.HostAddrs, in.HostNets = f.Addrs, f.Nets
	if _, err := PlanStack(in); !errors.Is(err, ErrWideHostNet) {
		t.Errorf("the remote's /6: %v, want ErrWideHostNet", err)
	}
}
