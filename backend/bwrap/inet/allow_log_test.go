package inet

import (
	"bytes"
	"strings"
	"testing"
	"time"
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
