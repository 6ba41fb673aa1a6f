package inet

import (
	"errors"
	"github.com/heavy-duty/box/policy"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// SyntheticRange is where DNS inside an allowlist sandbox puts allowed names: one address
// per name, 198.18.0.0/15 (benchmarking, never routed). The redirect catches every
// connection whatever its address; the synthetic address tells the proxy the name for
// protocols that do not carry one (ssh to github.com:22).
var SyntheticRange = netip.MustParsePrefix("198.18.0.0/15")

// synthetic maps names to synthetic addresses and back, handing out the next address
// for each new name.
type synthetic struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   netip.Addr
}

func (s *synthetic) addr(name string) (netip.Addr, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.byName[name]; ok {
		return a, true
	}
	if s.byName == nil {
		s.byName, s.byAddr = map[string]netip.Addr{}, map[netip.Addr]string{}
		s.next = SyntheticRange.Addr().Next()
	}
	if !SyntheticRange.Contains(s.next) {
		return netip.Addr{}, false
	}
	a := s.next
	s.next = a.Next()
	s.byName[name], s.byAddr[a] = a, name
	return a, true
}

func (s *synthetic) name(a netip.Addr) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byAddr[a]
}

// ServeDNS answers queries on pc until it is closed: an allowed name gets its synthetic
// A record (and an empty answer for other types), any other name NXDOMAIN, logged.
func (p *Proxy) ServeDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if resp := p.answer(buf[:n]); resp != nil {
			pc.WriteTo(resp, from)
		}
	}
}

// answer builds the reply to one query message (nil: not even a header to answer).
func (p *Proxy) answer(q []byte) []byte {
	var parser dnsmessage.Parser
	h, err := parser.Start(q)
	if err != nil {
		return nil
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	questions, err := parser.AllQuestions()
	if err != nil || len(questions) != 1 || h.OpCode != 0 {
		resp.RCode = dnsmessage.RCodeFormatError
		return build(resp, questions, nil)
	}
	qq := questions[0]
	name := policy.NormalizeName(qq.Name.String())
	if qq.Class != dnsmessage.ClassINET || !p.resolvable(name) {
		if p.dnsNoteworthy(name) {
			p.Log.Record(Event{Kind: EventRefusedDNS, Name: name, Reason: "not in the allowlist"})
		}
		resp.RCode = dnsmessage.RCodeNameError
		return build(resp, questions, nil)
	}
	resp.Authoritative = true
	if qq.Type != dnsmessage.TypeA {
		return build(resp, questions, nil) // NODATA: IPv4 only
	}
	a, ok := p.synth.addr(name)
	if !ok {
		resp.RCode = dnsmessage.RCodeServerFailure
		return build(resp, questions, nil)
	}
	rr := &dnsmessage.AResource{A: a.As4()}
	return build(resp, questions, rr)
}

// dnsRepeat is how long a refused name is not logged again: a resolver asks for A and
// AAAA (and retries) at once, and one line says it.
const dnsRepeat = time.Second

// dnsSeenMax bounds what dnsNoteworthy remembers: past it, the names logged more than
// dnsRepeat ago are forgotten, and when most are recent the memory starts afresh (a name
// may then be logged twice within a second; the log's own cap still holds).
const dnsSeenMax = 4096

// dnsNoteworthy reports whether a DNS refusal of name belongs in the log: not a bare
// single-label name (the sandbox's own host name, search-list noise: never allowable),
// nor a repeat within dnsRepeat.
func (p *Proxy) dnsNoteworthy(name string) bool {
	if !strings.Contains(name, ".") {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.dnsSeen == nil {
		p.dnsSeen = map[string]time.Time{}
	}
	if t, ok := p.dnsSeen[name]; ok && now.Sub(t) < dnsRepeat {
		return false
	}
	if len(p.dnsSeen) >= dnsSeenMax {
		for n, t := range p.dnsSeen {
			if now.Sub(t) >= dnsRepeat {
				delete(p.dnsSeen, n)
			}
		}
		if len(p.dnsSeen) >= dnsSeenMax/2 { // each sweep frees half at least
			clear(p.dnsSeen)
		}
	}
	p.dnsSeen[name] = now
	return true
}

func build(h dnsmessage.Header, qs []dnsmessage.Question, a *dnsmessage.AResource) []byte {
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	if b.StartQuestions() != nil {
		return nil
	}
	for _, q := range qs {
		b.Question(q)
	}
	if a != nil && len(qs) == 1 {
		b.StartAnswers()
		b.AResource(dnsmessage.ResourceHeader{Name: qs[0].Name, Class: dnsmessage.ClassINET, TTL: 60}, *a)
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
