package inet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heavy-duty/box/internal/acceptloop"
	"github.com/heavy-duty/box/policy"
)

// Proxy decides every connection of an allowlist sandbox. It runs in box's own process
// and network namespace: it accepts on the listener that lives in the sandbox's netns,
// learns the name from the TLS ClientHello's SNI, the HTTP Host header or (for other
// protocols) the synthetic address DNS handed out, and dials the name itself only when
// the allowlist allows it and it resolves outside the blocked ranges. TLS is never
// terminated: the bytes pass through untouched.
type Proxy struct {
	Allow *Allowlist
	Log   *Log
	// Blocked ranges and the host's own addresses are never dialled, whatever a name
	// resolves to (DNS rebinding).
	Blocked   []netip.Prefix
	HostAddrs []netip.Addr
	// HostNets are the host's own subnets (its LAN, however numbered) and the prefixes
	// it routes to networks of its own (HostRoutes: a VPN's): never dialled either.
	HostNets []netip.Prefix
	// Lookup resolves a name to IPv4 addresses (nil: the host's resolver).
	Lookup func(ctx context.Context, name string) ([]netip.Addr, error)
	// Dial connects to an address (nil: a net.Dialer with a 10 s timeout).
	Dial func(ctx context.Context, addr netip.AddrPort) (net.Conn, error)
	// SSH are the run's SSH hosts (allow_ssh.go): admitted on the address DNS answered
	// for the name only.
	SSH []SSHHost
	// SearchLookup resolves names as the host's resolver configuration says, search
	// list included: test builds only (BOX_UNSAFE_OFF=resolver-search), to show the
	// drill's BREACH.
	SearchLookup bool
	// SSHAnyAddress widens that admission to any address on an SSH host's port: test
	// builds only (BOX_UNSAFE_OFF=ssh-allowlist), to show the drill's BREACH.
	SSHAnyAddress bool

	// wait is the back-off's sleep (nil: time.Sleep); a test takes the turns.
	wait func(time.Duration)

	synth synthetic
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
	// dnsSeen: when each refused name was last logged (dnsNoteworthy).
	dnsSeen map[string]time.Time
}

// How long the proxy waits for a client's first bytes, and how much it reads to find the
// name, before it gives up on a connection; how many connections it holds at once (more
// are closed at once: a sandbox cannot make box itself run out of descriptors).
const (
	peekTimeout = 10 * time.Second
	peekMax     = 16 << 10
	maxConns    = 4096
)

// Serve accepts until ln is closed.
func (p *Proxy) Serve(ln net.Listener) {
	var wait acceptloop.Backoff
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if acceptloop.Exhausted(err) {
				// Out of descriptors (the sandbox's connections and their upstream
				// halves) spun a CPU outside the sandbox's limits: wait for some to close.
				p.sleep(wait.Next())
			}
			continue
		}
		wait.Reset()
		if !p.track(c) {
			c.Close()
			p.mu.Lock()
			done := p.done
			p.mu.Unlock()
			if done {
				return
			}
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *Proxy) sleep(d time.Duration) {
	if p.wait != nil {
		p.wait(d)
		return
	}
	time.Sleep(d)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || len(p.conns) >= maxConns {
		return false
	}
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Close ends every connection in flight and waits for their handlers.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// Decision is what the proxy made of one connection (for tests and the log).
type Decision struct {
	Name   string
	Dst    string // what the sandbox dialled, ADDR:PORT
	Dialed string // where the proxy connected, "" when refused
	Reason string // why it refused, "" when allowed
	SSH    bool   // decided as an SSH host's connection (logged when admitted too)
	// Unreachable: allowed, but the host could not resolve or connect to it (Reason
	// says which); not a refusal.
	Unreachable bool
}

func (p *Proxy) handle(c net.Conn) {
	d, upstream, head := p.decide(c)
	if d.Reason != "" {
		p.Log.Record(refusal(d))
		return
	}
	if d.SSH {
		p.Log.Record(Event{Kind: EventSSH, Name: d.Name, Addr: d.Dst, Reason: "admitted, dialled " + d.Dialed})
	}
	defer upstream.Close()
	if _, err := upstream.Write(head); err != nil {
		return
	}
	splice(c, upstream)
}

// refusal is the log's event for a connection the proxy did not make.
func refusal(d Decision) Event {
	kind := EventRefused
	if d.Unreachable {
		kind = EventUnreachable
	}
	return Event{Kind: kind, Name: d.Name, Addr: d.Dst, Reason: d.Reason}
}

// decide reads what it needs of c and either refuses (Reason set) or returns the
// connected upstream and the bytes already read from c.
func (p *Proxy) decide(c net.Conn) (d Decision, upstream net.Conn, head []byte) {
	a4, port, ok := originalDst(c)
	if !ok {
		d.Reason = "a connection to the proxy itself"
		return d, nil, nil
	}
	return p.decideDst(c, netip.AddrFrom4(a4), port)
}

// decideDst is decide for a connection the sandbox sent to dst:port.
func (p *Proxy) decideDst(c net.Conn, dst netip.Addr, port uint16) (d Decision, upstream net.Conn, head []byte) {
	d.Dst = netip.AddrPortFrom(dst, port).String()
	synthName := p.synth.name(dst)
	if sd, up, ok := p.decideSSH(dst, port, synthName); ok {
		return sd, up, nil
	}

	// Protocols where the server speaks first (ssh, smtp...) send nothing to peek at:
	// the name is the one DNS gave the synthetic address for.
	if synthName == "" || port == 80 || port == 443 {
		var name string
		var err error
		name, head, err = peekName(c)
		switch {
		case err != nil && synthName == "":
			d.Reason = err.Error()
			return d, nil, head
		case name != "":
			synthName = name
		}
	}
	d.Name = synthName
	if d.Name == "" {
		d.Reason = "no name: a connection by address (the allowlist tier allows names only)"
		return d, nil, head
	}
	// An SSH host's name and port are admitted on DNS's answer alone (decideSSH), never
	// on a name the client wrote (SNI, Host) to an address DNS did not answer for it,
	// even when the allowlist also names it.
	if slices.Contains(p.SSH, SSHHost{Name: d.Name, Port: port}) || !p.Allow.Allows(d.Name, port) {
		d.Reason = "not in the allowlist"
		if why := p.sshReason(d.Name, port); why != "" {
			d.Reason, d.SSH = why, true
		} else if p.Allow.Resolvable(d.Name) {
			d.Reason = "port " + strconv.Itoa(int(port)) + " not allowed for this name"
		}
		return d, nil, head
	}
	return d, p.connect(&d, port), head
}

// connect resolves d.Name on the host and dials the first address outside the blocked
// ranges on port: it sets d.Dialed, or d.Reason and returns nil.
func (p *Proxy) connect(d *Decision, port uint16) net.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := p.lookup(ctx, d.Name)
	if err != nil {
		d.Reason, d.Unreachable = "does not resolve: "+err.Error(), true
		return nil
	}
	var refused []string
	var lastErr error
	for _, a := range addrs {
		if why := p.blocked(a); why != "" {
			refused = append(refused, a.String()+" ("+why+")")
			continue
		}
		ap := netip.AddrPortFrom(a, port)
		up, err := p.dial(ctx, ap)
		if err == nil {
			d.Dialed = ap.String()
			return up
		}
		lastErr = err
	}
	switch {
	case lastErr != nil:
		d.Reason, d.Unreachable = "connect failed: "+lastErr.Error(), true
	case len(refused) > 0:
		d.Reason = "resolves to a blocked address: " + strings.Join(refused, ", ")
	default:
		d.Reason, d.Unreachable = "resolves to no IPv4 address", true
	}
	return nil
}

// blocked says why a is never dialled ("" when it may be).
func (p *Proxy) blocked(a netip.Addr) string {
	a = a.Unmap()
	if !a.Is4() {
		return "IPv6"
	}
	for _, b := range p.Blocked {
		if b.Contains(a) {
			return "in " + b.String()
		}
	}
	if slices.Contains(p.HostAddrs, a) {
		return "the host's own address"
	}
	for _, n := range p.HostNets {
		if n.Contains(a) {
			return "a network of the host's own (its LAN, a route of its own) " + n.String()
		}
	}
	return ""
}

func (p *Proxy) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	if p.Lookup != nil {
		return p.Lookup(ctx, name)
	}
	if !p.SearchLookup {
		// Rooted: the host's search list never applies. Without the dot, a name the
		// allowlist allows by a wildcard (zz.github.com) that does not exist was tried
		// again as zz.github.com.SEARCH-DOMAIN, and a LAN resolver's answer for that
		// name, another host, was dialled as if it were the allowed name (review
		// finding, session 10).
		name += "."
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
}

func (p *Proxy) dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, ap)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp4", ap.String())
}

// splice copies both ways until both directions are done, passing half-closes on.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(b, a)
		closeWrite(b)
	}()
	io.Copy(a, b)
	closeWrite(a)
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// peekName reads the start of a client's stream and returns the name it asks for: the
// SNI of a TLS ClientHello or the Host of an HTTP request ("" when it names none, or
// names an address). head is everything read, to be replayed upstream.
func peekName(c net.Conn) (name string, head []byte, err error) {
	c.SetReadDeadline(time.Now().Add(peekTimeout))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) > 0 {
			n, done, perr := parseName(buf)
			if perr != nil {
				return "", buf, perr
			}
			if done {
				return n, buf, nil
			}
		}
		if len(buf) >= peekMax {
			return "", buf, errors.New("no name in the first 16 KiB")
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		n, rerr := c.Read(buf[len(buf):min(cap(buf), peekMax)])
		buf = buf[:len(buf)+n]
		if rerr != nil {
			if n > 0 {
				continue
			}
			if len(buf) == 0 {
				return "", buf, errors.New("no name: the client sent nothing")
			}
			return "", buf, fmt.Errorf("no name: %v", rerr)
		}
	}
}

// parseName looks at the first bytes of a stream: done is false while more bytes are
// needed. A stream that is neither TLS nor HTTP is done with no name.
func parseName(b []byte) (name string, done bool, err error) {
	if b[0] == 0x16 { // TLS handshake record
		return parseSNI(b)
	}
	if i := bytes.IndexByte(b, ' '); i > 0 && isMethod(b[:i]) {
		end := bytes.Index(b, []byte("\r\n\r\n"))
		if end < 0 {
			return "", false, nil
		}
		return httpHost(b[:end]), true, nil
	} else if i < 0 && len(b) < 16 && isMethod(b) {
		return "", false, nil // "GE": wait for the rest of the method
	}
	return "", true, nil
}

func isMethod(b []byte) bool {
	if len(b) == 0 || len(b) > 16 {
		return false
	}
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// httpHost is the Host header's name, without a port; "" for an address or none.
func httpHost(head []byte) string {
	for _, l := range strings.Split(string(head), "\r\n")[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "host") {
			continue
		}
		h := strings.TrimSpace(v)
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		return hostName(h)
	}
	return ""
}

// hostName is h normalised, or "" when it is an address or not a valid name.
func hostName(h string) string {
	h = policy.NormalizeName(strings.Trim(h, "[]"))
	if _, err := netip.ParseAddr(h); err == nil {
		return ""
	}
	if policy.ValidHostname(h) != nil {
		return ""
	}
	return h
}

// parseSNI finds server_name in a TLS ClientHello that fits one record.
func parseSNI(b []byte) (string, bool, error) {
	if len(b) < 5 {
		return "", false, nil
	}
	n := int(binary.BigEndian.Uint16(b[3:5]))
	if len(b) < 5+n {
		return "", false, nil
	}
	r := reader(b[5 : 5+n])
	if t, _ := r.u8(); t != 1 { // ClientHello
		return "", true, errors.New("TLS: not a ClientHello")
	}
	body, ok := r.bytes24()
	if !ok {
		return "", true, errors.New("TLS: ClientHello spans records")
	}
	h := reader(body)
	h.skip(2 + 32) // version, random
	if _, ok := h.bytes8(); !ok {
		return "", true, errors.New("TLS: bad session id")
	}
	if _, ok := h.bytes16(); !ok {
		return "", true, errors.New("TLS: bad cipher suites")
	}
	if _, ok := h.bytes8(); !ok {
		return "", true, errors.New("TLS: bad compression methods")
	}
	exts, ok := h.bytes16()
	if !ok {
		return "", true, nil // no extensions, so no SNI
	}
	e := reader(exts)
	for len(e) > 0 {
		typ, ok1 := e.u16()
		data, ok2 := e.bytes16()
		if !ok1 || !ok2 {
			return "", true, errors.New("TLS: bad extensions")
		}
		if typ != 0 { // server_name
			continue
		}
		l := reader(data)
		list, _ := l.bytes16()
		s := reader(list)
		for len(s) > 0 {
			kind, _ := s.u8()
			host, ok := s.bytes16()
			if !ok {
				return "", true, errors.New("TLS: bad server_name")
			}
			if kind == 0 {
				return hostName(string(host)), true, nil
			}
		}
	}
	return "", true, nil
}

// reader consumes big-endian, length-prefixed fields.
type reader []byte

func (r *reader) skip(n int) {
	if n > len(*r) {
		n = len(*r)
	}
	*r = (*r)[n:]
}

func (r *reader) u8() (byte, bool) {
	if len(*r) < 1 {
		return 0, false
	}
	v := (*r)[0]
	*r = (*r)[1:]
	return v, true
}

func (r *reader) u16() (uint16, bool) {
	if len(*r) < 2 {
		return 0, false
	}
	v := binary.BigEndian.Uint16(*r)
	*r = (*r)[2:]
	return v, true
}

func (r *reader) take(n int) ([]byte, bool) {
	if n > len(*r) {
		return nil, false
	}
	v := (*r)[:n]
	*r = (*r)[n:]
	return v, true
}

func (r *reader) bytes8() ([]byte, bool) {
	n, ok := r.u8()
	if !ok {
		return nil, false
	}
	return r.take(int(n))
}

func (r *reader) bytes16() ([]byte, bool) {
	n, ok := r.u16()
	if !ok {
		return nil, false
	}
	return r.take(int(n))
}

func (r *reader) bytes24() ([]byte, bool) {
	if len(*r) < 3 {
		return nil, false
	}
	n := int((*r)[0])<<16 | int((*r)[1])<<8 | int((*r)[2])
	*r = (*r)[3:]
	return r.take(n)
}
