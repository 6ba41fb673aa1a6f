package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// fakeLab: the host's agent is x/crypto's in-memory keyring (a fake, for the protocol
// cases a real client never sends; the real agent and clients are in realagent_test.go).
type fakeLab struct {
	client  agent.ExtendedAgent
	user    ssh.Signer
	host    ssh.Signer
	filter  *Filter
	log     *syncBuf
	closeFn func()
}

func newSigner(t testing.TB) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func newFake(t *testing.T, p Policy) *fakeLab {
	t.Helper()
	ring := agent.NewKeyring()
	user, priv := newSigner(t)
	if err := ring.Add(agent.AddedKey{PrivateKey: priv, Comment: "user"}); err != nil {
		t.Fatal(err)
	}
	host, _ := newSigner(t)
	p.Keys = []string{"user"}
	p.Hosts = append(p.Hosts, Host{Name: "forge", Keys: []ssh.PublicKey{host.PublicKey()}})
	l := &fakeLab{user: user, host: host, log: &syncBuf{}}
	l.filter = &Filter{Policy: p, Log: l.log, Dial: func() (net.Conn, error) {
		a, b := net.Pipe()
		go agent.ServeAgent(ring, b)
		return a, nil
	}}
	a, b := net.Pipe()
	go l.filter.ServeConn(b)
	l.client = agent.NewClient(a)
	t.Cleanup(func() { a.Close() })
	return l
}

func bindMsg(t testing.TB, host ssh.Signer, sid []byte, fwd bool) []byte {
	t.Helper()
	sig, err := host.Sign(rand.Reader, sid)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.Marshal(sessionBind{HostKey: host.PublicKey().Marshal(), SessionID: sid, Signature: ssh.Marshal(sig), Forwarding: fwd})
}

func authReq(sid []byte, user ssh.PublicKey, method string, hostKey ssh.PublicKey) []byte {
	r := UserAuthRequest{SessionID: sid, Type: msgUserAuthReq, User: "git", Service: "ssh-connection", Method: method, HasSig: true, Algo: user.Type(), PubKey: user.Marshal()}
	if hostKey != nil {
		r.Rest = ssh.Marshal(hostBoundTail{HostKey: hostKey.Marshal()})
	}
	return ssh.Marshal(r)
}

func (l *fakeLab) lastReason(t *testing.T) string {
	rs := l.log.records(t)
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].Reason
}

func TestSignPolicy(t *testing.T) {
	sid := []byte("0123456789abcdef0123456789abcdef")
	other, _ := newSigner(t)
	for _, tc := range []struct {
		name   string
		binds  func(l *fakeLab) [][]byte
		data   func(l *fakeLab) []byte
		reason string
	}{
		{"bound publickey", func(l *fakeLab) [][]byte { return [][]byte{bindMsg(t, l.host, sid, false)} },
			func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodPublicKey, nil) }, ""},
		{"bound hostbound", func(l *fakeLab) [][]byte { return [][]byte{bindMsg(t, l.host, sid, false)} },
			func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodHostBound, l.host.PublicKey()) }, ""},
		{"hostbound names another host", func(l *fakeLab) [][]byte { return [][]byte{bindMsg(t, l.host, sid, false)} },
			func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodHostBound, other.PublicKey()) }, reasonSession},
		{"no bind", func(l *fakeLab) [][]byte { return nil },
			func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodPublicKey, nil) }, reasonNoBind},
		{"other session", func(l *fakeLab) [][]byte { return [][]byte{bindMsg(t, l.host, sid, false)} },
			func(l *fakeLab) []byte { return authReq([]byte("another"), l.user.PublicKey(), methodPublicKey, nil) }, reasonSession},
		{"disallowed host", func(l *fakeLab) [][]byte { return [][]byte{bindMsg(t, other, sid, false)} },
			func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodPublicKey, nil) }, reasonHost},
		{"forwarded", func(l *fakeLab) [][]byte {
			return [][]byte{bindMsg(t, l.host, []byte("first"), true), bindMsg(t, l.host, sid, false)}
		}, func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodPublicKey, nil) }, reasonForwarded},
		{"forged bind", func(l *fakeLab) [][]byte {
			m := bindMsg(t, other, sid, false)
			var b sessionBind
			ssh.Unmarshal(m, &b)
			b.HostKey = l.host.PublicKey().Marshal() // the allowed key, another's signature
			return [][]byte{ssh.Marshal(b)}
		}, func(l *fakeLab) []byte { return authReq(sid, l.user.PublicKey(), methodPublicKey, nil) }, reasonBadBind},
		{"arbitrary data", func(l *fakeLab) [][]byte { return [][]byte{bindMsg(t, l.host, sid, false)} },
			func(l *fakeLab) []byte { return []byte("sign me") }, reasonUnknown},
		{"git signature off", func(l *fakeLab) [][]byte { return nil },
			func(l *fakeLab) []byte {
				return append([]byte(sshsigMagic), ssh.Marshal(sshsig{Namespace: "git", HashAlg: "sha512", Hash: make([]byte, 64)})...)
			}, reasonNoSign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newFake(t, Policy{})
			for _, b := range tc.binds(l) {
				l.client.Extension(sessionBindExt, b)
			}
			_, err := l.client.Sign(l.user.PublicKey(), tc.data(l))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v (%s)", err, l.lastReason(t))
				}
				return
			}
			if err == nil {
				t.Fatalf("signed; want refused for %q", tc.reason)
			}
			if got := l.lastReason(t); got != tc.reason {
				t.Fatalf("reason %q, want %q", got, tc.reason)
			}
			if said := strings.Contains(l.filter.Summary(), "no session-bind"); said != (tc.reason == reasonNoBind) {
				t.Fatalf("summary %q", l.filter.Summary())
			}
		})
	}
}

func TestOtherRequestsRefused(t *testing.T) {
	l := newFake(t, Policy{})
	if _, err := l.client.Extension("query", nil); !errors.Is(err, agent.ErrExtensionUnsupported) {
		t.Errorf("query extension: %v", err)
	}
	if err := l.client.Lock([]byte("x")); err == nil {
		t.Error("lock accepted")
	}
	if err := l.client.Unlock([]byte("x")); err == nil {
		t.Error("unlock accepted")
	}
	_, priv := newSigner(t)
	if err := l.client.Add(agent.AddedKey{PrivateKey: priv}); err == nil {
		t.Error("add accepted")
	}
	if err := l.client.RemoveAll(); err == nil {
		t.Error("remove-all accepted")
	}
	keys, err := l.client.List()
	if err != nil || len(keys) != 1 {
		t.Fatalf("list after refusals: %v %v", keys, err)
	}
	if _, r := l.filter.Counts(); r != 5 {
		t.Fatalf("refused %d, want 5: %+v", r, l.log.records(t))
	}
}

func TestHostKeys(t *testing.T) {
	dir := t.TempDir()
	a, _ := newSigner(t)
	b, _ := newSigner(t)
	c, _ := newSigner(t)
	rev, _ := newSigner(t)
	kh := filepath.Join(dir, "known_hosts")
	lines := []string{
		knownhosts.Line([]string{"plain.example"}, a.PublicKey()),
		knownhosts.HashHostname("hashed.example") + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(b.PublicKey()))),
		knownhosts.Line([]string{"port.example:2222"}, c.PublicKey()),
		knownhosts.Line([]string{"port.example"}, b.PublicKey()), // port 22: not port 2222's
		knownhosts.Line([]string{"plain.example"}, rev.PublicKey()),
		"@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(rev.PublicKey()))),
	}
	os.WriteFile(kh, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	hosts, err := HostKeys([]string{"plain.example", "hashed.example", "port.example:2222"}, []string{kh, filepath.Join(dir, "absent")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ssh.PublicKey{"plain.example": a.PublicKey(), "hashed.example": b.PublicKey(), "port.example:2222": c.PublicKey()}
	for _, h := range hosts {
		if len(h.Keys) != 1 || string(h.Keys[0].Marshal()) != string(want[h.Name].Marshal()) {
			t.Errorf("%s: %d keys, want exactly its own", h.Name, len(h.Keys))
		}
	}
	if got := string(KnownHosts(hosts[2:])); !strings.HasPrefix(got, "[port.example]:2222 ") {
		t.Errorf("rendered %q", got)
	}
	if _, err := HostKeys([]string{"nowhere.example"}, []string{kh}, nil); !errors.Is(err, ErrNoHostKey) {
		t.Errorf("unknown host: %v", err)
	}
	prof := "nowhere.example " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(a.PublicKey())))
	if hs, err := HostKeys([]string{"nowhere.example"}, nil, []string{prof}); err != nil || len(hs[0].Keys) != 1 {
		t.Errorf("profile host key: %v", err)
	}
	if _, err := HostKeys([]string{"plain.example"}, []string{kh}, []string{prof}); !errors.Is(err, ErrHostKeyLine) {
		t.Errorf("host_keys line for a host not allowed: %v", err)
	}
	for _, bad := range []string{"", "user@host", "*.example", "host:0", "host:99999", "host:x", "[host", "a b"} {
		if err := CheckHost(bad); !errors.Is(err, ErrHostSpec) {
			t.Errorf("CheckHost(%q) = %v", bad, err)
		}
	}
}

// A request longer than MaxRequest ends the connection at its length, before a byte of
// it is read or allocated (x/crypto alone reads up to 16 MiB per request: MaxConns
// connections held mid-request kept 1 GiB of box's memory); requests within it, one
// after another on one connection, are served as before.
func TestRequestLengthCapped(t *testing.T) {
	l := newFake(t, Policy{})
	for range 3 { // framing kept across requests
		if ks, err := l.client.List(); err != nil || len(ks) != 1 {
			t.Fatalf("list: %v %v", ks, err)
		}
	}
	// Exactly the cap: read whole and answered (an unknown message: failure).
	a, b := net.Pipe()
	go l.filter.ServeConn(b)
	defer a.Close()
	msg := make([]byte, 4+MaxRequest)
	binary.BigEndian.PutUint32(msg, MaxRequest)
	msg[4] = 0xf0
	go a.Write(msg)
	reply := make([]byte, 5)
	if _, err := io.ReadFull(a, reply); err != nil || reply[4] != 5 { // SSH_AGENT_FAILURE
		t.Fatalf("a request of MaxRequest bytes: %v %v", reply, err)
	}
	// One byte more: the connection ends at the length.
	c, d := net.Pipe()
	done := make(chan struct{})
	go func() { l.filter.ServeConn(d); close(done) }()
	binary.BigEndian.PutUint32(msg, MaxRequest+1)
	if _, err := c.Write(msg[:4]); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := c.Write(msg[4:5]); err == nil {
		t.Error("the filter read on past a request longer than MaxRequest")
	}
	if r := l.lastReason(t); !strings.Contains(r, reasonTooLarge) {
		t.Errorf("the refusal is not logged: %q", r)
	}
}
