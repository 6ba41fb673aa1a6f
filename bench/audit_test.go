package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// tree makes the project a git repository holding repos nested repositories and files
// plain files (spread over directories of 100), owned by the test user, and re-reads the
// bare argv for it.
func (r *rig) tree(b *testing.B, repos, files int) {
	b.Helper()
	testenv.RequireTool(b, "git")
	git := func(dir string) {
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			b.Fatalf("git init %s: %v %s", dir, err, out)
		}
	}
	git(r.proj)
	for i := range repos {
		d := filepath.Join(r.proj, "vendor", fmt.Sprintf("lib%02d", i))
		git(d)
		os.WriteFile(filepath.Join(d, "code.go"), []byte("package lib\n"), 0o644)
	}
	for i := range files {
		d := filepath.Join(r.proj, "node_modules", fmt.Sprintf("p%03d", i/100))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.js", i)), nil, 0o644)
	}
	filepath.Walk(r.proj, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, r.uid, r.gid) })
	out, err := r.cmd(r.box, "run", "--dry-run", "--", "true").Output()
	if err != nil {
		b.Fatal(err)
	}
	r.bareArgs = parseDryRun(b, out)
}

// ratio alternates bare bwrap and box run in one loop (as BenchmarkRunRatio does).
func (r *rig) ratio(b *testing.B) {
	var tBox, tBare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r.runBare(b)
		t1 := time.Now()
		r.runBox(b)
		tBox += time.Since(t1)
		tBare += t1.Sub(t0)
	}
	b.ReportMetric(float64(tBox)/float64(tBare), "box/bare")
	b.ReportMetric(float64(tBare.Microseconds())/float64(b.N), "bare-µs/op")
	b.ReportMetric(float64(tBox.Microseconds())/float64(b.N), "box-µs/op")
}

// A repository with 50 nested repositories: the post-run audit's two walks and config
// reads against bare bwrap.
func BenchmarkRunRatioNested50(b *testing.B) {
	r := setup(b)
	r.tree(b, 50, 0)
	r.ratio(b)
}

// The same with 20,000 plain files beside them: the walk grows with the tree (it must
// see every directory to find every repository), the rest does not.
func BenchmarkRunRatioNested50Files20k(b *testing.B) {
	r := setup(b)
	r.tree(b, 50, 20000)
	r.ratio(b)
}
