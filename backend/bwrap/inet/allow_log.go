package inet

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event kinds of the allowlist tier's log.
const (
	EventRefused    = "refused"     // a connection the proxy did not make
	EventRefusedDNS = "refused-dns" // a name DNS inside did not answer
	EventAllowed    = "allowed"     // the operator allowed a pattern while the sandbox ran
	// EventUnreachable: an allowed name the proxy could not reach from the host (it does
	// not resolve there, or no address answered). Not a refusal: said apart, so a name
	// the operator did allow is not reported as refused (field review, session 18).
	EventUnreachable = "unreachable"
)

// Event is one line of the log: when, what, the name (or "-"), the address and port the
// sandbox asked for (or "-"), and why.
type Event struct {
	Time   time.Time
	Kind   string
	Name   string
	Addr   string // ADDR:PORT, or "" when there is none (DNS)
	Reason string
}

// String is the event's log line: TIME KIND NAME ADDR:PORT REASON, space separated, with
// "-" for an empty field, so `awk '{print $3}'` lists the names.
func (e Event) String() string {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	return fmt.Sprintf("%s %s %s %s %s", e.Time.UTC().Format(time.RFC3339), e.Kind, dash(e.Name), dash(e.Addr), e.Reason)
}

// MaxLogLines bounds what one run writes: a sandbox refused in a loop must not fill the
// operator's disk. Later events are counted, not written.
const MaxLogLines = 20000

// The names a sandbox makes up are without number (a DNS flood of distinct names): the
// counts keep maxRefusedKeys of them, the rest counted together, and the summary names
// the summaryNames most refused, so neither box's memory nor the operator's terminal grows
// with the flood (review finding, session 8: 150,000 names held 120 MB and printed a
// 38 MB summary line).
const (
	maxRefusedKeys = 1000
	summaryNames   = 20
)

// Log records the tier's events to every writer (the operator's per-run log, the copy in
// the sandbox's ~/.claude) and keeps the counts for the end-of-run summary.
type Log struct {
	mu          sync.Mutex
	writers     []io.Writer
	now         func() time.Time
	refused     counts
	unreachable counts
	live        []string // the patterns the operator allowed while the sandbox ran
	lines       int
}

// counts are one kind's events by name (or address), maxRefusedKeys names of them.
type counts struct {
	by     map[string]int
	others int // events of names past maxRefusedKeys
	total  int
}

func (c *counts) add(key string) {
	if c.by == nil {
		c.by = map[string]int{}
	}
	if _, ok := c.by[key]; ok || len(c.by) < maxRefusedKeys {
		c.by[key]++
	} else {
		c.others++
	}
	c.total++
}

// summary is "LABEL N: NAME (count), ..., others (count)", most first ("" for none).
func (c *counts) summary(label string) string {
	if c.total == 0 {
		return ""
	}
	keys := c.sorted()
	rest := c.others
	if len(keys) > summaryNames {
		for _, k := range keys[summaryNames:] {
			rest += c.by[k]
		}
		keys = keys[:summaryNames]
	}
	parts := make([]string, len(keys), len(keys)+1)
	for i, k := range keys {
		parts[i] = k + " (" + strconv.Itoa(c.by[k]) + ")"
	}
	if rest > 0 {
		parts = append(parts, "others ("+strconv.Itoa(rest)+")")
	}
	return fmt.Sprintf("%s %d: %s", label, c.total, strings.Join(parts, ", "))
}

// sorted are the names counted, most first.
func (c *counts) sorted() []string {
	keys := make([]string, 0, len(c.by))
	for k := range c.by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if a, b := c.by[keys[i]], c.by[keys[j]]; a != b {
			return a > b
		}
		return keys[i] < keys[j]
	})
	return keys
}

// NewLog writes every event, one line each, to ws.
func NewLog(ws ...io.Writer) *Log {
	return &Log{writers: ws, now: time.Now}
}

// Record stamps e with the time (when unset) and writes it.
func (l *Log) Record(e Event) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	// Names come from the sandbox (a DNS query's labels are any bytes): escaped, they
	// can neither forge a line of the log nor drive the operator's terminal.
	e.Name, e.Addr, e.Reason = logField(e.Name, false), logField(e.Addr, false), logField(e.Reason, true)
	line := e.String() + "\n"
	l.lines++
	switch {
	case l.lines == MaxLogLines:
		line = fmt.Sprintf("%s log-full - - %d lines written; further events are counted, not written\n", e.Time.UTC().Format(time.RFC3339), MaxLogLines-1)
		fallthrough
	case l.lines < MaxLogLines:
		for _, w := range l.writers {
			io.WriteString(w, line) // best effort: the sandbox may have removed its copy
		}
	}
	key := e.Name
	if key == "" {
		key = e.Addr
	}
	switch e.Kind {
	case EventRefused, EventRefusedDNS:
		l.refused.add(key)
	case EventUnreachable:
		l.unreachable.add(key)
	case EventAllowed:
		if !slices.Contains(l.live, e.Name) {
			l.live = append(l.live, e.Name)
		}
	}
}

// logField escapes the bytes of s that are not printable ASCII (and the backslash) as
// \xNN; spaces too unless spaces is set (a name is one field of the line).
func logField(s string, spaces bool) string {
	clean := func(c byte) bool { return c > ' ' && c < 0x7f && c != '\\' || spaces && c == ' ' }
	i := 0
	for i < len(s) && clean(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	for j := 0; j < len(s); j++ {
		if clean(s[j]) {
			b.WriteByte(s[j])
		} else {
			fmt.Fprintf(&b, "\\x%02x", s[j])
		}
	}
	return b.String()
}

// Refused is how many refusals were recorded.
func (l *Log) Refused() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused.total
}

// RefusedNames are the names (or addresses) refused, most refused first.
func (l *Log) RefusedNames() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused.sorted()
}

// AllowedLive are the patterns the operator allowed while the sandbox ran (box allow),
// in the order allowed.
func (l *Log) AllowedLive() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.live)
}

// Summary is the end-of-run line: how many refusals, for which names, most first, then
// the allowed names the host could not reach (empty when there were neither).
func (l *Log) Summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	if s := l.refused.summary("refused"); s != "" {
		parts = append(parts, s)
	}
	if s := l.unreachable.summary("allowed but unreachable from the host"); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
