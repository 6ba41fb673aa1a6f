package policy

// The allowlist tier's names: the entries a profile's allow key and --allow take, and the
// built-in lists they may name.

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// lists are the built-in allowlists a profile or --allow names as @NAME: the one place
// they are defined (docs/bwrap.md lists them). A name without a port allows ports 80 and
// 443; ":22" entries are for git over ssh. A slice, sorted by name, not a map: the
// compiler lays it out as data, where a map was built at every start of box, --version's
// included (issue 24).
var lists = []struct {
	name  string
	hosts []string
}{
	{"anthropic", []string{"api.anthropic.com", "console.anthropic.com", "statsig.anthropic.com", "claude.ai"}},
	{"crates", []string{"crates.io", "index.crates.io", "static.crates.io"}},
	{"debian", []string{"deb.debian.org", "security.debian.org"}},
	{"github", []string{"github.com", "*.github.com", "github.com:22", "*.githubusercontent.com", "ghcr.io",
		"codeload.github.com", "*.githubassets.com"}},
	{"go", []string{"proxy.golang.org", "sum.golang.org", "index.golang.org", "storage.googleapis.com"}},
	{"npm", []string{"registry.npmjs.org", "registry.yarnpkg.com"}},
	{"pypi", []string{"pypi.org", "files.pythonhosted.org"}},
}

// List is the built-in allowlist NAME (without the @); known is false for none.
func List(name string) (hosts []string, known bool) {
	for _, l := range lists {
		if l.name == name {
			return l.hosts, true
		}
	}
	return nil, false
}

// ListNames are the built-in lists' names, sorted (with the @).
func ListNames() []string {
	out := make([]string, len(lists))
	for i, l := range lists {
		out[i] = "@" + l.name
	}
	return out
}

// DefaultPorts are what an allow entry without a port allows: HTTP and HTTPS.
var DefaultPorts = []uint16{80, 443}

// Pattern is one allowed name: an exact host name, or "*.suffix" (any name below suffix,
// one label or more, never suffix itself), on one port or, when Port is 0, DefaultPorts.
type Pattern struct {
	Host     string // lower case, no trailing dot; for a wildcard the suffix without "*."
	Wildcard bool
	Port     uint16
}

func (p Pattern) String() string {
	s := p.Host
	if p.Wildcard {
		s = "*." + s
	}
	if p.Port != 0 {
		s += ":" + strconv.Itoa(int(p.Port))
	}
	return s
}

// Matches reports whether the pattern allows name (normalised: lower case, no trailing
// dot) on port.
func (p Pattern) Matches(name string, port uint16) bool {
	if p.Port != 0 && p.Port != port || p.Port == 0 && !slices.Contains(DefaultPorts, port) {
		return false
	}
	if p.Wildcard {
		return strings.HasSuffix(name, "."+p.Host)
	}
	return name == p.Host
}

// PatternError is an allow entry that is not a name, a *.name or a known @list.
type PatternError struct {
	Entry, Why string
}

func (e *PatternError) Error() string { return fmt.Sprintf("allow %q: %s", e.Entry, e.Why) }

// ParsePattern parses one allow entry that is not a list: NAME, *.NAME, with an optional
// :PORT.
func ParsePattern(entry string) (Pattern, error) {
	bad := func(why string) (Pattern, error) { return Pattern{}, &PatternError{entry, why} }
	s := entry
	var p Pattern
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		n, err := strconv.ParseUint(s[i+1:], 10, 16)
		if err != nil || n == 0 {
			return bad("the port must be a number from 1 to 65535")
		}
		p.Port, s = uint16(n), s[:i]
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		p.Wildcard, s = true, rest
	}
	if strings.Contains(s, "*") {
		return bad(`a wildcard is only "*." at the start, as in "*.example.com"`)
	}
	s = strings.TrimSuffix(strings.ToLower(s), ".")
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return bad("an address is not a name: the allowlist tier allows host names, and refuses connections by address")
	}
	if err := ValidHostname(s); err != nil {
		return bad(err.Error())
	}
	if !strings.Contains(s, ".") {
		if p.Wildcard {
			return bad(`a wildcard needs a domain of two labels or more, as in "*.example.com"`)
		}
		return bad(`a single label is not an internet name: want a name with a dot, as in "github.com"`)
	}
	p.Host = s
	return p, nil
}

// NormalizeName is a name as the tier compares it: lower case, without a trailing dot.
func NormalizeName(s string) string { return strings.TrimSuffix(strings.ToLower(s), ".") }

// ValidHostname checks a DNS name: labels of letters, digits and inner hyphens, 1 to 63
// characters each, 253 in all.
func ValidHostname(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > 253 {
		return fmt.Errorf("a name is at most 253 characters")
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("each label of a name is 1 to 63 characters")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("a label cannot start or end with '-'")
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("%q is not allowed in a name (letters, digits, '-' and '.'; IDNs in their xn-- form)", c)
			}
		}
	}
	return nil
}

// ParseAllow expands entries (names, *.names, @lists) into patterns, deduplicated, in
// order. Every bad entry is an error naming it.
func ParseAllow(entries []string) ([]Pattern, error) {
	var out []Pattern
	for _, e := range entries {
		if name, ok := strings.CutPrefix(e, "@"); ok {
			list, known := List(name)
			if !known {
				return nil, &PatternError{e, "no such built-in list (known: " + strings.Join(ListNames(), ", ") + ")"}
			}
			ps, err := ParseAllow(list)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
			continue
		}
		p, err := ParsePattern(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	var dedup []Pattern
	for _, p := range out {
		if !slices.Contains(dedup, p) {
			dedup = append(dedup, p)
		}
	}
	return dedup, nil
}
