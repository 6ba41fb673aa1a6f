package inet

import (
	"slices"
	"strings"
	"sync"

	"github.com/heavy-duty/box/policy"
)

// Allowlist is the live set of allowed patterns; Add extends it while the sandbox runs.
type Allowlist struct {
	mu       sync.RWMutex
	patterns []policy.Pattern
}

// NewAllowlist is an allowlist of ps.
func NewAllowlist(ps []policy.Pattern) *Allowlist { return &Allowlist{patterns: slices.Clone(ps)} }

// Allows reports whether name (any case, trailing dot or not) may be reached on port.
func (a *Allowlist) Allows(name string, port uint16) bool {
	name = policy.NormalizeName(name)
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, p := range a.patterns {
		if p.Matches(name, port) {
			return true
		}
	}
	return false
}

// Resolvable reports whether DNS inside should answer name: some pattern allows it on
// some port.
func (a *Allowlist) Resolvable(name string) bool {
	name = policy.NormalizeName(name)
	a.mu.RLock()
	defer a.mu.RUnlock()
	for _, p := range a.patterns {
		if p.Wildcard && strings.HasSuffix(name, "."+p.Host) || !p.Wildcard && name == p.Host {
			return true
		}
	}
	return false
}

// Add allows more patterns; it reports those that were new.
func (a *Allowlist) Add(ps ...policy.Pattern) []policy.Pattern {
	a.mu.Lock()
	defer a.mu.Unlock()
	var added []policy.Pattern
	for _, p := range ps {
		if !slices.Contains(a.patterns, p) {
			a.patterns = append(a.patterns, p)
			added = append(added, p)
		}
	}
	return added
}

// Patterns returns the current patterns.
func (a *Allowlist) Patterns() []policy.Pattern {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return slices.Clone(a.patterns)
}
