package inet

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// A DNS query's labels are any bytes the sandbox chose: they can neither forge a line of
// the operator's log nor reach the terminal through the summary (review finding,
// session 4: a newline forged an "allowed ... by the operator" line, ESC sequences set
// the title and hid the real refusals).
func TestLogEscapesSandboxNames(t *testing.T) {
	var b bytes.Buffer
	l := NewLog(&b)
	l.now = func() time.Time { return time.Unix(0, 0) }
	forged := "x - not in the allowlist\n2026-12-01t13:16:24z allowed evil.com - by the operator, live"
	l.Record(Event{Kind: EventRefusedDNS, Name: forged, Reason: "not in the allowlist"})
	l.Record(Event{Kind: EventRefusedDNS, Name: "\x1b]0;owned\x07\rbox: allowlist: no refusals\x1b[8m.hidden", Reason: "not in the allowlist"})
	l.Record(Event{Kind: EventRefused, Name: "denied.test", Addr: "203.0.113.10:443", Reason: "not in the allowlist"})
	out, sum := b.String(), l.Summary()
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines, want 3:\n%s", n, out)
	}
	for _, s := range []string{out, sum} {
		for _, c := range []string{"\x1b", "\x07", "\r", "allowed evil.com - by"} {
			if strings.Contains(s, c) {
				t.Errorf("%q reached the log or summary: %q", c, s)
			}
		}
	}
	if !strings.Contains(out, `x\x20-\x20not\x20in\x20the\x20allowlist\x0a2026`) || !strings.Contains(sum, "denied.test (1)") {
		t.Errorf("log %q, summary %q", out, sum)
	}
	if got := (Event{Time: time.Unix(0, 0), Kind: EventRefused, Name: "github.com", Addr: "1.2.3.4:443", Reason: "not in the allowlist"}).String(); got != "1970-01-01T00:00:00Z refused github.com 1.2.3.4:443 not in the allowlist" {
		t.Errorf("a plain event: %q", got)
	}
}

// A sandbox flooding DNS with distinct names (each refused) grows neither box's memory
// nor the end-of-run summary with the flood (review finding, session 8: 150,000 names
// held 120 MB in box and printed a 38 MB summary line).
func TestRefusalFloodIsBounded(t *testing.T) {
	l := NewLog(io.Discard)
	p := &Proxy{Allow: NewAllowlist(nil), Log: l}
	const n = 3 * maxRefusedKeys
	for i := range n {
		name := fmt.Sprintf("x%d.flood.test", i)
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: uint16(i), RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
		q, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		p.answer(q)
	}
	for i := range 2 * dnsSeenMax {
		p.dnsNoteworthy(fmt.Sprintf("y%d.flood.test", i))
	}
	if len(l.refused.by) > maxRefusedKeys || len(p.dnsSeen) > dnsSeenMax {
		t.Errorf("kept %d names' counts (max %d), %d names' last logging (max %d)", len(l.refused.by), maxRefusedKeys, len(p.dnsSeen), dnsSeenMax)
	}
	sum := l.Summary()
	if l.Refused() != n || !strings.HasPrefix(sum, fmt.Sprintf("refused %d: ", n)) || !strings.HasSuffix(sum, fmt.Sprintf("others (%d)", n-summaryNames)) || strings.Count(sum, ".flood.test") != summaryNames {
		t.Errorf("%d refused, summary (%d bytes) %.300q", l.Refused(), len(sum), sum)
	}
}
