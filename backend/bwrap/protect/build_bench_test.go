package protect

import (
	"fmt"
	"testing"
)

// BenchmarkBuildNested: the protected set of a working directory holding 50 nested
// repositories (the tree of bench's repos=50), from facts: what Resolve pays after the
// scan, and the candidates the scan computes to stat them (-benchmem: allocations).
func BenchmarkBuildNested(b *testing.B) {
	w := "/w"
	t := Tree{Workdir: w, Tops: []string{w}, GitDirs: []GitDirFact{{Path: w + "/.git"}}, Exists: map[string]FileKind{}}
	for i := 0; i < 50; i++ {
		top := fmt.Sprintf("%s/vendor/lib%02d", w, i)
		t.Tops = append(t.Tops, top)
		t.Nested = append(t.Nested, top+"/.git")
	}
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Build(t, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("candidates", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			t.Candidates(Options{})
		}
	})
}
