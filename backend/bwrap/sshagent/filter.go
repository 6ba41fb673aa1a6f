package sshagent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"

	"github.com/heavy-duty/box/internal/acceptloop"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Filter serves the filtered agent. Dial reaches the host's agent (a new connection per
// sandbox connection, so one client's state never leaks into another's); Log receives the
// JSON lines of every decision.
type Filter struct {
	Policy Policy
	Dial   func() (net.Conn, error)
	Log    io.Writer
	// MaxLog caps what Log receives (0: DefaultMaxLog).
	MaxLog int64
	// MaxRequest caps one request's length (0: MaxRequest).
	MaxRequest uint32

	mu      sync.Mutex
	signed  int
	refused int
	noBind  int // refused for want of a session-bind: said apart in the summary
	conns   map[net.Conn]struct{}
	// ups are the connections to the host's agent, closed by Close with the sandbox's:
	// a request the host's agent holds (a key that asks its user first) ends with the run.
	ups    map[net.Conn]struct{}
	ln     net.Listener
	closed bool
	wg     sync.WaitGroup

	// logged is what Log received; past the cap, requests are only counted.
	logged                           int64
	truncated                        bool
	unloggedAllowed, unloggedRefused int
}

// The reasons a request is refused, as the log says them.
const (
	reasonChange    = "the sandbox may not change the host's agent"
	reasonExtension = "extension not offered by box's agent"
	reasonNotChosen = "key not chosen by the profile"
	reasonNoBind    = "no session-bind@openssh.com on this connection (OpenSSH older than 8.9?): box signs host authentication only for a session bound to an allowed host"
	reasonForwarded = "forwarded connection (ssh -A): box never signs for a session it cannot see"
	reasonHost      = "destination host key is not one of an allowed host's"
	reasonBadBind   = "session-bind signature does not verify"
	reasonSession   = "signed data is not this session's authentication request"
	reasonNoSign    = "signing is off in the profile (ssh.sign)"
	reasonNamespace = "git signatures only: namespace is not \"git\""
	reasonUnknown   = "data is neither an SSH authentication request nor a git signature"
	reasonUpstream  = "host agent: "
	reasonTooMany   = "too many session-binds on one connection"
	reasonConns     = "too many connections open at once"
	reasonExhausted = "box is out of file descriptors: waiting for connections to close"
	reasonTooLarge  = "request longer than the agent protocol needs"
	maxBinds        = 16
	sessionBindExt  = "session-bind@openssh.com"
	msgUserAuthReq  = 50
	methodPublicKey = "publickey"
	methodHostBound = "publickey-hostbound-v00@openssh.com"
	sshsigMagic     = "SSHSIG"
	sshsigNamespace = "git"
)

// MaxConns bounds the sandbox's connections open at once. Each served connection holds
// one to the host's agent, whose own bound (OpenSSH: its open files, 1024 by default) is
// shared with every other program of the operator's: a sandbox holding a thousand open
// would leave the operator's own ssh and git waiting on an agent that accepts no more
// (a hostile review did). A connection past the bound is closed at once.
const MaxConns = 64

// MaxRequest is the longest request the filter reads, OpenSSH's own bound (ssh-agent's
// AGENT_MAX_LEN): the largest the protocol needs (a session-bind with an RSA host key, a
// signature request) is a few KiB. x/crypto's ServeAgent alone allocates and reads up to
// 16 MiB per request: MaxConns connections held mid-request kept 1 GiB of box's own
// memory, outside the sandbox's limit (a hostile review's finding).
const MaxRequest = 256 << 10

// ErrRefused is what the sandbox's client gets (as SSH_AGENT_FAILURE) for a refused
// request; the reason is in the log.
var ErrRefused = errors.New("refused by box's ssh agent filter")

// Counts: signatures made and requests refused so far.
func (f *Filter) Counts() (signed, refused int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.signed, f.refused
}

// Serve accepts sandbox connections until Close.
func (f *Filter) Serve(ln net.Listener) error {
	// agent.ServeAgent reports each refused request through the standard logger; box's
	// own log has the reasons, and the user's terminal is not the place for them.
	log.SetOutput(io.Discard)
	f.mu.Lock()
	f.ln = ln
	if f.conns == nil {
		f.conns = map[net.Conn]struct{}{}
	}
	f.mu.Unlock()
	var wait acceptloop.Backoff
	for {
		c, err := ln.Accept()
		if err != nil {
			f.mu.Lock()
			closed := f.closed
			f.mu.Unlock()
			if closed {
				return nil
			}
			if acceptloop.Exhausted(err) {
				if wait.First() {
					f.record(Record{Op: "accept", Allowed: false, Reason: reasonExhausted})
				}
				// Out of descriptors (box's other doors full) is not the end of the
				// filter: back off as net/http's server does, and serve again once
				// connections close.
				time.Sleep(wait.Next())
				continue
			}
			return err
		}
		wait.Reset()
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			c.Close()
			return nil
		}
		if len(f.conns) >= MaxConns {
			f.mu.Unlock()
			// Logged before the close the client sees: what it reads next finds the line.
			f.record(Record{Op: "connect", Allowed: false, Reason: reasonConns})
			c.Close()
			continue
		}
		f.conns[c] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go func() {
			defer f.wg.Done()
			f.ServeConn(c)
			f.mu.Lock()
			delete(f.conns, c)
			f.mu.Unlock()
		}()
	}
}

// Close stops the listener and every open connection, and waits for them.
func (f *Filter) Close() error {
	f.mu.Lock()
	f.closed = true
	var err error
	if f.ln != nil {
		err = f.ln.Close()
	}
	for c := range f.conns {
		c.Close()
	}
	// A request the host's agent holds (one that asks its user first) would otherwise
	// keep its connection's goroutine, and so Close, until someone answered it.
	for c := range f.ups {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	f.closeLog()
	return err
}

// ServeConn serves one sandbox connection; its session-binds hold for it alone.
func (f *Filter) ServeConn(c net.Conn) {
	defer c.Close()
	sc := &session{f: f}
	defer sc.close()
	limit := f.MaxRequest
	if limit == 0 {
		limit = MaxRequest
	}
	agent.ServeAgent(sc, &capped{Conn: c, max: limit, f: f})
}

// errTooLarge ends a connection whose request is longer than the filter reads.
var errTooLarge = errors.New("agent request too large")

// capped hands ServeAgent a connection's requests (a 4-byte length, then as many bytes)
// only when the length is within max: ServeAgent reads the length, then allocates it.
type capped struct {
	net.Conn
	max  uint32
	f    *Filter
	hdr  []byte // the current request's length, not yet read by ServeAgent
	left uint32 // the current request's bytes not yet read
}

func (c *capped) Read(p []byte) (int, error) {
	if len(c.hdr) == 0 && c.left == 0 {
		var h [4]byte
		if _, err := io.ReadFull(c.Conn, h[:]); err != nil {
			return 0, err
		}
		l := binary.BigEndian.Uint32(h[:])
		if l > c.max {
			c.f.record(Record{Op: "request", Allowed: false, Reason: fmt.Sprintf("%s (%d bytes, at most %d)", reasonTooLarge, l, c.max)})
			return 0, errTooLarge
		}
		c.hdr, c.left = h[:], l
	}
	if len(c.hdr) > 0 {
		n := copy(p, c.hdr)
		c.hdr = c.hdr[n:]
		return n, nil
	}
	if uint32(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= uint32(n)
	return n, err
}

// session is one connection's state: the upstream agent and the binds seen.
type session struct {
	f         *Filter
	upConn    net.Conn
	up        agent.ExtendedAgent
	binds     []bind
	forwarded bool
	badBind   bool
}

type bind struct {
	host    string // the allowed host's name, "" when the key is no allowed host's
	hostKey ssh.PublicKey
	sid     []byte
}

func (s *session) close() {
	if s.upConn != nil {
		s.f.mu.Lock()
		delete(s.f.ups, s.upConn)
		s.f.mu.Unlock()
		s.upConn.Close()
	}
}

// errClosed: the filter closed while a connection was asking the host's agent.
var errClosed = errors.New("box's ssh agent filter is closing")

func (s *session) upstream() (agent.ExtendedAgent, error) {
	if s.up != nil {
		return s.up, nil
	}
	c, err := s.f.Dial()
	if err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	if s.f.closed {
		s.f.mu.Unlock()
		c.Close()
		return nil, errClosed
	}
	if s.f.ups == nil {
		s.f.ups = map[net.Conn]struct{}{}
	}
	s.f.ups[c] = struct{}{}
	s.f.mu.Unlock()
	s.upConn, s.up = c, agent.NewClient(c)
	return s.up, nil
}

func (s *session) refuse(op, key, host, reason string) error {
	s.f.record(Record{Op: op, Key: key, Host: host, Allowed: false, Reason: reason})
	return ErrRefused
}

// List shows the chosen keys only.
func (s *session) List() ([]*agent.Key, error) {
	up, err := s.upstream()
	if err != nil {
		return nil, s.refuse("list", "", "", reasonUpstream+err.Error())
	}
	all, err := up.List()
	if err != nil {
		return nil, s.refuse("list", "", "", reasonUpstream+err.Error())
	}
	var out []*agent.Key
	var fps []string
	for _, k := range all {
		if s.f.Policy.chosen(k, k.Comment) {
			out = append(out, k)
			fps = append(fps, Fingerprint(k))
		}
	}
	s.f.record(Record{Op: "list", Allowed: true, Keys: fps})
	return out, nil
}

func (s *session) Sign(key ssh.PublicKey, data []byte) (*ssh.Signature, error) {
	return s.SignWithFlags(key, data, 0)
}

// SignWithFlags signs what the policy allows and nothing else.
func (s *session) SignWithFlags(key ssh.PublicKey, data []byte, flags agent.SignatureFlags) (*ssh.Signature, error) {
	fp := Fingerprint(key)
	up, err := s.upstream()
	if err != nil {
		return nil, s.refuse("sign", fp, "", reasonUpstream+err.Error())
	}
	// The key must be one the sandbox was shown, asked of the host's agent now (a key
	// removed outside since List is not signed with).
	all, err := up.List()
	if err != nil {
		return nil, s.refuse("sign", fp, "", reasonUpstream+err.Error())
	}
	shown := false
	for _, k := range all {
		if bytes.Equal(k.Marshal(), key.Marshal()) && s.f.Policy.chosen(k, k.Comment) {
			shown = true
		}
	}
	op, host, reason := s.decide(key, data)
	if !shown {
		reason = reasonNotChosen
	}
	if reason != "" {
		return nil, s.refuse(op, fp, host, reason)
	}
	sig, err := up.SignWithFlags(key, data, flags)
	if err != nil {
		return nil, s.refuse(op, fp, host, reasonUpstream+err.Error())
	}
	s.f.record(Record{Op: op, Key: fp, Host: host, Allowed: true})
	return sig, nil
}

// UserAuthRequest is the data an SSH client asks the agent to sign for publickey
// authentication (RFC 4252 section 7; the hostbound method appends the server's host key
// in Rest). The filter reads it; the drill's ssh rows send one, as a client would.
type UserAuthRequest struct {
	SessionID []byte
	Type      byte
	User      string
	Service   string
	Method    string
	HasSig    bool
	Algo      string
	PubKey    []byte
	Rest      []byte `ssh:"rest"`
}

type hostBoundTail struct {
	HostKey []byte
}

// sshsig is the blob ssh-keygen -Y sign asks to be signed, after the "SSHSIG" magic
// (OpenSSH PROTOCOL.sshsig).
type sshsig struct {
	Namespace string
	Reserved  string
	HashAlg   string
	Hash      []byte
}

// decide names the operation, the destination, and why it is refused ("" when allowed).
func (s *session) decide(key ssh.PublicKey, data []byte) (op, host, reason string) {
	if s.forwarded {
		return "sign", s.lastHost(), reasonForwarded
	}
	if bytes.HasPrefix(data, []byte(sshsigMagic)) {
		var sg sshsig
		if err := ssh.Unmarshal(data[len(sshsigMagic):], &sg); err != nil {
			return "sign-git", "", reasonUnknown
		}
		if !s.f.Policy.Sign {
			return "sign-git", "", reasonNoSign
		}
		if sg.Namespace != sshsigNamespace {
			return "sign-git", "", reasonNamespace + " (" + sg.Namespace + ")"
		}
		return "sign-git", "", ""
	}
	var req UserAuthRequest
	if err := ssh.Unmarshal(data, &req); err != nil || req.Type != msgUserAuthReq || !req.HasSig {
		return "sign", s.lastHost(), reasonUnknown
	}
	if s.badBind {
		return "sign", s.lastHost(), reasonBadBind
	}
	if len(s.binds) == 0 {
		return "sign", "", reasonNoBind
	}
	b := s.binds[len(s.binds)-1]
	host = b.host
	if host == "" {
		host = "unknown host key " + Fingerprint(b.hostKey)
	}
	if !bytes.Equal(req.SessionID, b.sid) || !bytes.Equal(req.PubKey, key.Marshal()) {
		return "sign", host, reasonSession
	}
	switch req.Method {
	case methodPublicKey:
		if len(req.Rest) != 0 {
			return "sign", host, reasonSession
		}
	case methodHostBound:
		var t hostBoundTail
		if err := ssh.Unmarshal(req.Rest, &t); err != nil || !bytes.Equal(t.HostKey, b.hostKey.Marshal()) {
			return "sign", host, reasonSession
		}
	default:
		return "sign", host, reasonSession
	}
	if b.host == "" {
		return "sign", host, reasonHost
	}
	return "sign", host, ""
}

func (s *session) lastHost() string {
	if len(s.binds) == 0 {
		return ""
	}
	b := s.binds[len(s.binds)-1]
	if b.host == "" {
		return "unknown host key " + Fingerprint(b.hostKey)
	}
	return b.host
}

// sessionBind is session-bind@openssh.com's content (OpenSSH PROTOCOL.agent).
type sessionBind struct {
	HostKey    []byte
	SessionID  []byte
	Signature  []byte
	Forwarding bool
}

// Extension accepts session-bind only, verified; every other extension is refused.
func (s *session) Extension(typ string, contents []byte) ([]byte, error) {
	if typ != sessionBindExt {
		s.refuse("extension", "", "", reasonExtension+" ("+typ+")")
		return nil, agent.ErrExtensionUnsupported
	}
	var m sessionBind
	if err := ssh.Unmarshal(contents, &m); err != nil {
		s.badBind = true
		return nil, s.refuse("session-bind", "", "", reasonBadBind)
	}
	hk, err := ssh.ParsePublicKey(m.HostKey)
	if err != nil {
		s.badBind = true
		return nil, s.refuse("session-bind", "", "", reasonBadBind)
	}
	var sig ssh.Signature
	if err := ssh.Unmarshal(m.Signature, &sig); err != nil || hk.Verify(m.SessionID, &sig) != nil {
		// A bind that does not verify poisons the connection: what it would have bound
		// cannot be told from a forgery.
		s.badBind = true
		return nil, s.refuse("session-bind", "", "host key "+Fingerprint(hk), reasonBadBind)
	}
	if len(s.binds) >= maxBinds {
		s.badBind = true
		return nil, s.refuse("session-bind", "", "", reasonTooMany)
	}
	b := bind{host: s.f.Policy.hostFor(hk), hostKey: hk, sid: m.SessionID}
	s.binds = append(s.binds, b)
	if m.Forwarding {
		s.forwarded = true
	}
	host := b.host
	if host == "" {
		host = "unknown host key " + Fingerprint(hk)
	}
	// The bind itself is accepted (OpenSSH goes on to ask); what it allows is decided
	// at the signature.
	s.f.record(Record{Op: "session-bind", Host: host, Allowed: true, Forwarded: m.Forwarding})
	return nil, nil
}

func (s *session) Add(agent.AddedKey) error {
	return s.refuse("add", "", "", reasonChange)
}

func (s *session) Remove(key ssh.PublicKey) error {
	return s.refuse("remove", Fingerprint(key), "", reasonChange)
}

func (s *session) RemoveAll() error { return s.refuse("remove-all", "", "", reasonChange) }

func (s *session) Lock([]byte) error { return s.refuse("lock", "", "", reasonChange) }

func (s *session) Unlock([]byte) error { return s.refuse("unlock", "", "", reasonChange) }

// Signers is not part of the protocol the server speaks; nothing inside reaches it.
func (s *session) Signers() ([]ssh.Signer, error) { return nil, ErrRefused }
