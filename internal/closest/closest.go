// Package closest finds the names a mistyped one was probably meant to be, for "did you
// mean" hints.
package closest

import (
	"sort"
	"strings"
)

// Names are the names within a small edit distance of name (or sharing its prefix),
// nearest first, at most three.
func Names(name string, names []string) []string {
	type cand struct {
		n string
		d int
	}
	var cs []cand
	for _, n := range names {
		d := Distance(strings.ToLower(name), strings.ToLower(n))
		if d <= max(2, len(name)/3) || strings.HasPrefix(n, name) || strings.HasPrefix(name, n) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].n < cs[j].n
	})
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].n)
	}
	return out
}

// Distance is the Levenshtein distance between a and b (bytes).
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
