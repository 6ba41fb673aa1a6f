package charclass

import (
	"regexp"
	"testing"
)

// TestMatchAgreesWithRegexp checks Match against the regular expressions it replaces.
func TestMatchAgreesWithRegexp(t *testing.T) {
	cases := []struct {
		re          string
		first, rest string
		max         int
	}{
		{`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`, "A-Za-z0-9", "A-Za-z0-9_-", 63},
		{`^[a-z_][a-z0-9_-]{0,31}$`, "a-z_", "a-z0-9_-", 32},
		{`^[A-Za-z0-9][A-Za-z0-9._:/-]*$`, "A-Za-z0-9", "A-Za-z0-9._:/-", 0},
		{`^[A-Za-z0-9_+][A-Za-z0-9._+-]*$`, "A-Za-z0-9_+", "A-Za-z0-9._+-", 0},
	}
	inputs := []string{"", "a", "A", "0", "-a", "_a", "a-b", "a_b", "a.b", "a/b", "a:b", "../x", "a b", "é", "claude",
		"images:debian/12", "x+y", "+x", "UPPER", "a\x00", "abcdefghijabcdefghijabcdefghijab", "abcdefghijabcdefghijabcdefghijabc",
		"a123456789012345678901234567890123456789012345678901234567890123"}
	for _, c := range cases {
		re := regexp.MustCompile(c.re)
		first, rest := New(c.first), New(c.rest)
		for _, in := range inputs {
			if got, want := Match(in, first, rest, c.max), re.MatchString(in); got != want {
				t.Errorf("%s on %q: Match = %v, regexp = %v", c.re, in, got, want)
			}
		}
	}
}
