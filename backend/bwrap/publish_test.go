package bwrap

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
)

func TestResolvePorts(t *testing.T) {
	r := testRequest()
	r.Profile.Publish = []policy.PortMap{{Host: 3000, Sandbox: 3000}}
	r.Profile.HostPorts = []int{5432}
	r.Publish = []policy.PortMap{{Host: 8080, Sandbox: 3000}, {Host: 3000, Sandbox: 3000}}
	r.HostPorts = []uint16{5432, 6379}
	p, err := Resolve(r, testFacts())
	if err != nil {
		t.Fatal(err)
	}
	got := p.Spec.Ports
	if !slices.Equal(got.Publish, []policy.PortMap{{Host: 3000, Sandbox: 3000}, {Host: 8080, Sandbox: 3000}}) ||
		!slices.Equal(got.HostPorts, []uint16{5432, 6379}) || !strings.HasSuffix(got.HostsFile, "/hosts") {
		t.Errorf("ports = %+v", got)
	}
	if p.Policy.Ports.HostsFile != got.HostsFile {
		t.Errorf("SANDBOX.md's policy lacks the ports: %+v", p.Policy.Ports)
	}
	if !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "5432, 6379 as host.box.internal") }) {
		t.Errorf("no warning for the host ports: %v", p.Warnings)
	}
	args, err := Args(p.Spec, p.Host)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args, got.HostsFile)
	if i < 1 || args[i-1] != "--ro-bind" || args[i+1] != "/etc/hosts" {
		t.Errorf("no /etc/hosts bind in %v", args)
	}
	line := p.PortsLine()
	for _, want := range []string{"127.0.0.1:8080 and [::1]:8080", "the sandbox's port 3000", "host.box.internal:5432, 6379"} {
		if !strings.Contains(line, want) {
			t.Errorf("dry-run line %q lacks %q", line, want)
		}
	}
	md := SandboxMD(p.Policy)
	if !strings.Contains(md, "http://127.0.0.1:8080/") || !strings.Contains(md, "`host.box.internal`") {
		t.Errorf("SANDBOX.md says nothing of the ports:\n%s", md)
	}
}

func TestResolvePortsNone(t *testing.T) {
	p, err := Resolve(testRequest(), testFacts())
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Ports.Any() || p.PortsLine() != "ports: none published; no host port reachable" || strings.Contains(SandboxMD(p.Policy), "Ports") {
		t.Errorf("ports without asking: %+v %q", p.Spec.Ports, p.PortsLine())
	}
	args, _ := Args(p.Spec, p.Host)
	if slices.Contains(args, "/etc/hosts") {
		t.Errorf("/etc/hosts replaced without host ports: %v", args)
	}
}

func TestResolvePortsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  func(*Request)
		want string
	}{
		{"publish in tier full", func(r *Request) { r.Network = "full"; r.Publish = []policy.PortMap{{Host: 3000, Sandbox: 3000}} }, "--publish"},
		{"host port in tier full", func(r *Request) { r.Network = "full"; r.HostPorts = []uint16{5432} }, "--host-port"},
	} {
		r := testRequest()
		tc.req(&r)
		_, err := Resolve(r, testFacts())
		var te *PortsTierError
		if !errors.As(err, &te) || te.What != tc.want {
			t.Errorf("%s: err = %v, want a *PortsTierError for %s", tc.name, err, tc.want)
		}
	}
	r := testRequest()
	r.Publish = []policy.PortMap{{Host: 8080, Sandbox: 3000}, {Host: 8080, Sandbox: 4000}}
	if _, err := Resolve(r, testFacts()); err == nil || !strings.Contains(err.Error(), "published twice") {
		t.Errorf("one host port for two sandbox ports: %v", err)
	}
	// The Landlock mode has no namespace to forward into: refused, never ignored.
	r = testRequest()
	r.Publish = []policy.PortMap{{Host: 3000, Sandbox: 3000}}
	p, err := Resolve(r, testFacts())
	if err != nil {
		t.Fatal(err)
	}
	p.Isolation.Mode = IsolationLandlock
	var ie *IsolationError
	if err := p.checkPortsIsolation(); !errors.As(err, &ie) {
		t.Errorf("landlock with ports: %v", err)
	}
}

func TestProfilePortsTOML(t *testing.T) {
	p, err := profiles.Parse("web", "test", []byte("network = \"internet\"\npublish = [3000, \"8080:3001\"]\nhost_ports = [5432]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Publish, []policy.PortMap{{Host: 3000, Sandbox: 3000}, {Host: 8080, Sandbox: 3001}}) || !slices.Equal(p.HostPorts, []int{5432}) {
		t.Errorf("profile = %+v %+v", p.Publish, p.HostPorts)
	}
	for src, want := range map[string]string{
		"publish = [0]\n":                        "1 to 65535",
		"publish = [\"a:3000\"]\n":               "host port",
		"publish = [3.5]\n":                      "want a port number",
		"host_ports = [70000]\n":                 "host_ports",
		"network = \"full\"\npublish = [3000]\n": "shares the host's network",
	} {
		if _, err := profiles.Parse("web", "test", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", src, err, want)
		}
	}
}

func TestHostsFile(t *testing.T) {
	got := string(hostsFile([]byte("127.0.0.1 localhost")))
	if got != "127.0.0.1 localhost\n# box: the host's named ports (--host-port)\n127.254.0.1\thost.box.internal\n" {
		t.Errorf("hosts = %q", got)
	}
}

// box info of a bwrap box says what its profile forwards at every session: its publish
// among the doors, its host_ports as the ports reached.
func TestProfilePortsInfo(t *testing.T) {
	b := &dirbox.Box{Stamp: dirbox.Stamp{Profile: &profiles.Profile{Publish: []policy.PortMap{{Host: 8080, Sandbox: 3000}}, HostPorts: []int{5432}}}}
	var out backend.Info
	profilePorts(b, &out)
	if len(out.Exposed) != 1 || out.Exposed[0] != (backend.Exposure{Device: "profile", Port: 3000, HostPort: 8080}) {
		t.Errorf("exposed: %+v", out.Exposed)
	}
	if len(out.HostPorts) != 1 || out.HostPorts[0] != 5432 {
		t.Errorf("host ports: %v", out.HostPorts)
	}
}
