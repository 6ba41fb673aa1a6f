package inet

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/policy"
	"golang.org/x/net/dns/dnsmessage"
)

// clientHello is the first flight of a real Go TLS client asking for sni.
func clientHello(t *testing.T, sni string) []byte {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: sni, InsecureSkipVerify: sni == ""})
		c.SetDeadline(time.Now().Add(2 * time.Second))
		c.Handshake()
		a.Close()
	}()
	b.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 0, 1<<14)
	for {
		if len(buf) >= 5 {
			if n := 5 + (int(buf[3])<<8 | int(buf[4])); len(buf) >= n {
				b.Close()
				return buf[:n]
			}
		}
		k, err := b.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil {
			t.Fatalf("read ClientHello: %v", err)
		}
	}
}

func TestParseName(t *testing.T) {
	hello := clientHello(t, "API.Allowed.test")
	for _, c := range []struct {
		name string
		in   []byte
		want string
		done bool
	}{
		{"sni", hello, "api.allowed.test", true},
		{"sni partial", hello[:len(hello)-1], "", false},
		{"no sni", clientHello(t, ""), "", true},
		{"http", []byte("GET / HTTP/1.1\r\nUser-Agent: x\r\nhost: Allowed.test:8080\r\n\r\n"), "allowed.test", true},
		{"http partial", []byte("GET / HTTP/1.1\r\nHost: allowed.test\r\n"), "", false},
		{"http method partial", []byte("GE"), "", false},
		{"http address", []byte("GET / HTTP/1.1\r\nHost: 203.0.113.10\r\n\r\n"), "", true},
		{"http v6 address", []byte("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"), "", true},
		{"http no host", []byte("GET / HTTP/1.0\r\n\r\n"), "", true},
		// What a sandbox writes to make the proxy check one name and dial another: none
		// is a name (the proxy then refuses, or dials the name DNS gave the address).
		{"http userinfo", []byte("GET / HTTP/1.1\r\nHost: allowed.test@lan.test\r\n\r\n"), "", true},
		{"http percent", []byte("GET / HTTP/1.1\r\nHost: lan%2etest\r\n\r\n"), "", true},
		{"http nul", []byte("GET / HTTP/1.1\r\nHost: allowed.test\x00.lan.test\r\n\r\n"), "", true},
		{"http utf-8", []byte("GET / HTTP/1.1\r\nHost: allowed.t\xc3\xa9st\r\n\r\n"), "", true},
		{"http mapped", []byte("GET / HTTP/1.1\r\nHost: [::ffff:192.168.77.10]\r\n\r\n"), "", true},
		{"http case, rooted", []byte("GET / HTTP/1.1\r\nHost: ALLOWED.TEST.:80\r\n\r\n"), "allowed.test", true},
		{"http double root", []byte("GET / HTTP/1.1\r\nHost: allowed.test..\r\n\r\n"), "", true},
		{"sni address", clientHello(t, "192.168.77.10"), "", true},
		{"ssh", []byte("SSH-2.0-OpenSSH_9.2\r\n"), "", true},
		{"binary", []byte{0, 1, 2}, "", true},
	} {
		name, done, err := parseName(c.in)
		if name != c.want || done != c.done {
			t.Errorf("%s: %q %v %v, want %q %v", c.name, name, done, err, c.want, c.done)
		}
	}
}

func TestDNSAnswer(t *testing.T) {
	var lines strings.Builder
	p := &Proxy{Allow: NewAllowlist(mustAllow(t, "allowed.test", "*.cdn.test")), Log: NewLog(&lines)}
	ask := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
		q, _ := b.Finish()
		var m dnsmessage.Message
		if err := m.Unpack(p.answer(q)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m
	}
	m := ask("allowed.test.", dnsmessage.TypeA)
	if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 || m.ID != 7 {
		t.Fatalf("allowed.test: %+v", m)
	}
	a := m.Answers[0].Body.(*dnsmessage.AResource).A
	if !SyntheticRange.Contains(netipFrom4(a)) || p.synth.name(netipFrom4(a)) != "allowed.test" {
		t.Errorf("allowed.test -> %v, not its synthetic address", a)
	}
	if again := ask("ALLOWED.test.", dnsmessage.TypeA); again.Answers[0].Body.(*dnsmessage.AResource).A != a {
		t.Errorf("a second answer differs")
	}
	if m := ask("x.cdn.test.", dnsmessage.TypeA); len(m.Answers) != 1 {
		t.Errorf("wildcard: %+v", m)
	}
	if m := ask("allowed.test.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Errorf("AAAA: %+v, want NODATA", m)
	}
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		if m := ask("denied.test.", typ); m.RCode != dnsmessage.RCodeNameError {
			t.Errorf("denied.test: %v, want NXDOMAIN", m.RCode)
		}
	}
	ask("box.", dnsmessage.TypeA)
	if n := strings.Count(lines.String(), "refused-dns denied.test"); n != 1 {
		t.Errorf("denied.test logged %d times (A and AAAA at once are one line):\n%s", n, lines.String())
	}
	if strings.Contains(lines.String(), " box ") {
		t.Errorf("a single-label name was logged:\n%s", lines.String())
	}
	if p.answer([]byte{1, 2}) != nil {
		t.Errorf("garbage answered")
	}
}

func TestControlAndSummary(t *testing.T) {
	var lines strings.Builder
	s := &AllowSession{Proxy: &Proxy{Allow: NewAllowlist(nil), Log: NewLog(&lines)}}
	for _, c := range []struct{ in, want string }{
		{"allow github.com", "ok github.com"},
		{"allow github.com", "ok (already allowed)"},
		{"allow @npm", "ok registry.npmjs.org registry.yarnpkg.com"},
		{"allow *", "error allow \"*\""},
		{"drop github.com", "error unknown request"},
	} {
		if got := s.control1(c.in); !strings.HasPrefix(got, c.want) {
			t.Errorf("%q -> %q, want %q", c.in, got, c.want)
		}
	}
	if !s.Proxy.Allow.Allows("github.com", 443) || !strings.Contains(lines.String(), "allowed github.com - by the operator, live") {
		t.Errorf("live allow not in force or not logged:\n%s", lines.String())
	}
	lg := s.Proxy.Log
	if lg.Summary() != "" {
		t.Errorf("summary without refusals: %q", lg.Summary())
	}
	lg.Record(Event{Kind: EventRefused, Name: "b.test", Addr: "198.18.0.1:443", Reason: "x"})
	lg.Record(Event{Kind: EventRefused, Addr: "203.0.113.10:80", Reason: "no name"})
	lg.Record(Event{Kind: EventRefusedDNS, Name: "b.test", Reason: "x"})
	if got, want := lg.Summary(), "refused 3: b.test (2), 203.0.113.10:80 (1)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func mustAllow(t *testing.T, entries ...string) []policy.Pattern {
	t.Helper()
	ps, err := policy.ParseAllow(entries)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func netipFrom4(a [4]byte) netip.Addr { return netip.AddrFrom4(a) }

// A sandbox refused in a loop cannot fill the operator's disk: the log stops at
// MaxLogLines (saying so) and keeps counting.
func TestLogBounded(t *testing.T) {
	var b strings.Builder
	lg := NewLog(&b)
	for i := 0; i < MaxLogLines+50; i++ {
		lg.Record(Event{Kind: EventRefused, Name: "loop.test", Addr: "198.18.0.1:443", Reason: "x"})
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != MaxLogLines || !strings.Contains(lines[len(lines)-1], "log-full") {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
	if lg.Refused() != MaxLogLines+50 {
		t.Errorf("counted %d", lg.Refused())
	}
}

// An allowed name that resolves into the host's own subnet (a LAN numbered in public
// space) is never dialled, though the address is in no blocked range (review finding,
// session 10); another public address is.
func TestProxyRefusesHostSubnet(t *testing.T) {
	var dialled []netip.AddrPort
	p := &Proxy{
		Allow: NewAllowlist(mustAllow(t, "allowed.test", "lan.test")), Log: NewLog(), Blocked: Blocked,
		HostAddrs: []netip.Addr{netip.MustParseAddr("198.51.100.2")},
		HostNets:  []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		Lookup: func(_ context.Context, name string) ([]netip.Addr, error) {
			if name == "lan.test" {
				return []netip.Addr{netip.MustParseAddr("198.51.100.10")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
		},
		Dial: func(_ context.Context, ap netip.AddrPort) (net.Conn, error) {
			dialled = append(dialled, ap)
			a, b := net.Pipe()
			b.Close()
			return a, nil
		},
	}
	for _, name := range []string{"lan.test", "allowed.test"} {
		d := Decision{Name: name}
		up := p.connect(&d, 80)
		if up != nil {
			up.Close()
		}
		t.Logf("%s: dialled %q, reason %q", name, d.Dialed, d.Reason)
	}
	if want := []netip.AddrPort{netip.MustParseAddrPort("203.0.113.10:80")}; !slices.Equal(dialled, want) {
		t.Errorf("dialled %v, want only %v", dialled, want)
	}
}

// An allowed name the host cannot resolve or reach is logged and summed up as
// unreachable, not as refused (field review, session 18: a name the operator allowed was
// reported "refused" when the host had no upstream DNS); a name resolving only into a
// blocked range stays a refusal.
func TestProxyUnreachableIsNoRefusal(t *testing.T) {
	var lines strings.Builder
	p := &Proxy{
		Allow: NewAllowlist(mustAllow(t, "gone.test", "down.test", "v6.test", "meta.test")), Log: NewLog(&lines), Blocked: Blocked,
		Lookup: func(_ context.Context, name string) ([]netip.Addr, error) {
			switch name {
			case "gone.test":
				return nil, errors.New("no such host")
			case "v6.test":
				return nil, nil
			case "meta.test":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil
		},
		Dial: func(context.Context, netip.AddrPort) (net.Conn, error) {
			return nil, errors.New("connection refused")
		},
	}
	want := map[string]bool{"gone.test": true, "down.test": true, "v6.test": true, "meta.test": false}
	for name, unreachable := range want {
		d := Decision{Name: name, Dst: "198.18.0.1:443"}
		if up := p.connect(&d, 443); up != nil {
			t.Fatalf("%s: connected", name)
		}
		if d.Reason == "" || d.Unreachable != unreachable {
			t.Errorf("%s: reason %q, unreachable %v, want %v", name, d.Reason, d.Unreachable, unreachable)
		}
		p.Log.Record(refusal(d))
	}
	for _, l := range []string{" unreachable gone.test 198.18.0.1:443 does not resolve: no such host", " unreachable down.test ", " unreachable v6.test ", " refused meta.test "} {
		if !strings.Contains(lines.String(), l) {
			t.Errorf("log lacks %q:\n%s", l, lines.String())
		}
	}
	if got, want := p.Log.Summary(), "refused 1: meta.test (1); allowed but unreachable from the host 3: down.test (1), gone.test (1), v6.test (1)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if p.Log.Refused() != 1 {
		t.Errorf("Refused() = %d, want 1", p.Log.Refused())
	}
}
