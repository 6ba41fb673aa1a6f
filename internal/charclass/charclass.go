// Package charclass matches names against ASCII character classes. It replaces regular
// expressions on box run's start-up path: compiling a dozen of them cost more than the
// rest of the validation together.
package charclass

// Class is a set of ASCII bytes.
type Class [256]bool

// New builds a class from a spec such as "A-Za-z0-9_-": ranges x-y, and a '-' first or
// last is literal.
func New(spec string) *Class {
	var c Class
	for i := 0; i < len(spec); i++ {
		if i+2 < len(spec) && spec[i+1] == '-' {
			for b := int(spec[i]); b <= int(spec[i+2]); b++ {
				c[b] = true
			}
			i += 2
			continue
		}
		c[spec[i]] = true
	}
	return &c
}

// Match reports whether s is one byte of first followed by bytes of rest, with a length
// from 1 to max (0: no maximum).
func Match(s string, first, rest *Class, max int) bool {
	if len(s) == 0 || (max > 0 && len(s) > max) || !first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest[s[i]] {
			return false
		}
	}
	return true
}

// All reports whether every byte of s is in c (true for "").
func All(s string, c *Class) bool {
	for i := 0; i < len(s); i++ {
		if !c[s[i]] {
			return false
		}
	}
	return true
}
