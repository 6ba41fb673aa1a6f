package inet

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// The SSH admission decided without a kernel: the synthetic address DNS answered for an
// SSH host on its port is dialled to the host's real address; the host's real address,
// another port, another allowed name's synthetic address, a name written in Host to an
// address DNS did not answer, and an unknown address are refused with a reason. The real
// proof is TestSSHAgentAllowlist (backend/bwrap), through the kernel and sshd.
func TestSSHAdmission(t *testing.T) {
	forge := netip.MustParseAddr("203.0.113.10")
	var dialled []string
	p := &Proxy{
		Allow: NewAllowlist(mustAllow(t, "web.test")),
		SSH:   []SSHHost{{Name: "forge.test", Port: 22}},
		Lookup: func(_ context.Context, name string) ([]netip.Addr, error) {
			return []netip.Addr{forge}, nil
		},
		Dial: func(_ context.Context, ap netip.AddrPort) (net.Conn, error) {
			dialled = append(dialled, ap.String())
			a, b := net.Pipe()
			b.Close()
			return a, nil
		},
	}
	if !p.resolvable("forge.test") || p.resolvable("other.test") {
		t.Fatal("DNS: the SSH host must resolve, another name not")
	}
	forgeSyn, _ := p.synth.addr("forge.test")
	webSyn, _ := p.synth.addr("web.test")
	decide := func(dst netip.Addr, port uint16, first string) Decision {
		c, s := net.Pipe()
		go func() { s.Write([]byte(first)); s.Close() }()
		d, up, _ := p.decideDst(c, dst, port)
		if up != nil {
			up.Close()
		}
		c.Close()
		return d
	}
	const banner = "SSH-2.0-OpenSSH_9.2 test\r\n"
	d := decide(forgeSyn, 22, banner)
	if d.Reason != "" || d.Dialed != "203.0.113.10:22" || !d.SSH || d.Name != "forge.test" {
		t.Errorf("forge by name: %+v", d)
	}
	for _, tc := range []struct {
		name      string
		dst       netip.Addr
		port      uint16
		first     string
		reasonHas string
	}{
		{"forge's address", forge, 22, banner, "no name"},
		{"forge by name, another port", forgeSyn, 2222, banner, "not this SSH host's port"},
		{"another allowed name's address", webSyn, 22, banner, "port 22 not allowed"},
		{"Host names the forge on its address", forge, 22, "GET / HTTP/1.1\r\nHost: forge.test\r\n\r\n", "only on the address the tier's DNS answered"},
		{"an address DNS never answered", netip.MustParseAddr("198.18.0.200"), 22, banner, "no name"},
	} {
		d := decide(tc.dst, tc.port, tc.first)
		if d.Dialed != "" || !strings.Contains(d.Reason, tc.reasonHas) {
			t.Errorf("%s: %+v, want refused (%s)", tc.name, d, tc.reasonHas)
		}
	}
	if len(dialled) != 1 {
		t.Errorf("dialled %v, want only the forge by name", dialled)
	}

	// Widened (test builds, BOX_UNSAFE_OFF=ssh-allowlist): the forge's address gets in.
	p.SSHAnyAddress = true
	if d := decide(forge, 22, banner); d.Dialed != "203.0.113.10:22" {
		t.Errorf("widened: %+v, want dialled", d)
	}
}

// Even when the allowlist also names the SSH host's name and port (@github has
// github.com:22), a Host header to an address DNS did not answer is refused.
func TestSSHOverridesAllowlistByHost(t *testing.T) {
	p := &Proxy{
		Allow: NewAllowlist(mustAllow(t, "forge.test:22")),
		SSH:   []SSHHost{{Name: "forge.test", Port: 22}},
		Dial:  func(context.Context, netip.AddrPort) (net.Conn, error) { t.Fatal("dialled"); return nil, nil },
	}
	c, s := net.Pipe()
	go func() { s.Write([]byte("GET / HTTP/1.1\r\nHost: forge.test\r\n\r\n")); s.Close() }()
	d, _, _ := p.decideDst(c, netip.MustParseAddr("203.0.113.10"), 22)
	if d.Reason == "" {
		t.Errorf("admitted: %+v", d)
	}
}
