package protect

import (
	"os"
	"testing"
)

// The home scan's cost on this machine's real home (BOX_BENCH_HOME, default $HOME): it
// runs at every launch, bounded by the home, not the tree.
func BenchmarkHomeLinks(b *testing.B) {
	home := os.Getenv("BOX_BENCH_HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	wd := b.TempDir()
	for b.Loop() {
		homeLinks(home, wd, nil)
	}
}
