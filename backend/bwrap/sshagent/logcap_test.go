package sshagent

import (
	"fmt"
	"strings"
	"testing"
)

// TestLogCap: a sandbox looping requests cannot grow the log it reads past the cap: the
// lines stop at it, one line says so, and when the filter closes one more says how many
// requests went unlogged (allowed and refused); the summary still counts them all.
func TestLogCap(t *testing.T) {
	l := newFake(t, Policy{})
	const limit = 4096
	l.filter.MaxLog = limit
	const refused, listed = 300, 50
	for range refused {
		if err := l.client.RemoveAll(); err == nil {
			t.Fatal("remove-all allowed")
		}
	}
	for range listed {
		if _, err := l.client.List(); err != nil {
			t.Fatal(err)
		}
	}
	l.filter.Close()
	recs := l.log.records(t)
	l.log.mu.Lock()
	size := l.log.b.Len()
	l.log.mu.Unlock()
	last, marks := recs[len(recs)-1], 0
	for _, r := range recs {
		if r.Op == OpTruncated {
			marks++
		}
	}
	if marks != 2 || last.Op != OpTruncated {
		t.Fatalf("want the cap's line and the final count's, got %d truncated lines; last %+v", marks, last)
	}
	// The requests' lines fit the cap; box's two lines about it are all that pass it.
	if size > limit+1024 {
		t.Errorf("log is %d bytes, cap %d", size, limit)
	}
	logged := len(recs) - 2
	unlogged := refused + listed - logged
	want := fmt.Sprintf("truncated: %d more request(s) not logged: %d allowed, %d refused", unlogged, listed, unlogged-listed)
	if last.Reason != want {
		t.Errorf("final line %q, want %q", last.Reason, want)
	}
	if s := l.filter.Summary(); !strings.Contains(s, fmt.Sprintf("%d request(s) refused", refused)) || !strings.Contains(s, fmt.Sprintf("%d request(s) counted, not logged", unlogged)) {
		t.Errorf("summary %q", s)
	}
}
