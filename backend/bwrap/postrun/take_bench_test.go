package postrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// BenchmarkTake: one snapshot of a repository with 50 nested ones and 20,000 plain files.
func BenchmarkTake(b *testing.B) {
	testenv.RequireTool(b, "git")
	wd := b.TempDir()
	exec.Command("git", "init", "-q", wd).Run()
	for i := range 50 {
		exec.Command("git", "init", "-q", filepath.Join(wd, "vendor", fmt.Sprintf("lib%02d", i))).Run()
	}
	for i := range 20000 {
		d := filepath.Join(wd, "node_modules", fmt.Sprintf("p%03d", i/100))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.js", i)), nil, 0o644)
	}
	in := Input{Workdir: wd}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if s := Take(in); len(s.Repos) != 51 {
			b.Fatalf("%d repos", len(s.Repos))
		}
	}
}
