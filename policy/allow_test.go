package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{"github.com", "github.com", ""},
		{"GitHub.COM.", "github.com", ""},
		{"*.githubusercontent.com", "*.githubusercontent.com", ""},
		{"api.anthropic.com:443", "api.anthropic.com:443", ""},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", ""},
		{"", "", "empty name"},
		{"*", "", "wildcard"},
		{"*.com", "", "two labels"},
		{"localhost", "", "single label"},
		{"a.*.com", "", "wildcard"},
		{"github.com:0", "", "port"},
		{"github.com:65536", "", "port"},
		{"github.com:ssh", "", "port"},
		{"203.0.113.10", "", "an address is not a name"},
		{"[::1]:443", "", "an address is not a name"},
		{"-bad.com", "", "start or end"},
		{"under_score.com", "", "not allowed in a name"},
		{"a..b", "", "1 to 63"},
		{strings.Repeat("a", 64) + ".com", "", "1 to 63"},
		{"https://github.com", "", "port"},
	} {
		p, err := ParsePattern(c.in)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: err %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && p.String() != c.want:
			t.Errorf("%q: %q, want %q", c.in, p, c.want)
		}
	}
}

func TestPatternMatches(t *testing.T) {
	ps, err := ParseAllow([]string{"github.com", "*.githubusercontent.com", "api.anthropic.com:443"})
	if err != nil {
		t.Fatal(err)
	}
	match := func(name string, port uint16) bool {
		for _, p := range ps {
			if p.Matches(NormalizeName(name), port) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		name string
		port uint16
		want bool
	}{
		{"github.com", 443, true}, {"github.com", 80, true}, {"GITHUB.com.", 443, true},
		{"github.com", 22, false}, {"api.github.com", 443, false}, {"evilgithub.com", 443, false},
		{"raw.githubusercontent.com", 443, true}, {"a.b.githubusercontent.com", 443, true},
		{"githubusercontent.com", 443, false}, {"githubusercontent.com.evil.com", 443, false},
		{"api.anthropic.com", 443, true}, {"api.anthropic.com", 80, false},
	} {
		if got := match(c.name, c.port); got != c.want {
			t.Errorf("%s:%d = %v, want %v", c.name, c.port, got, c.want)
		}
	}
}

func TestParseAllowLists(t *testing.T) {
	ps, err := ParseAllow([]string{"@github", "github.com", "@npm"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range ps {
		if p.String() == "github.com" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("github.com %d times after dedup: %v", n, ps)
	}
	if _, err := ParseAllow([]string{"@nope"}); err == nil || !strings.Contains(err.Error(), "@github") {
		t.Errorf("unknown list: %v, want the known ones named", err)
	}
	// Every built-in list parses.
	for _, l := range lists {
		if _, err := ParseAllow(l.hosts); err != nil {
			t.Errorf("@%s: %v", l.name, err)
		}
	}
	// ListNames is sorted and unique (List finds the first of a name).
	names := ListNames()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("ListNames %v: not sorted and unique", names)
	}
}
