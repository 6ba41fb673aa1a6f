package bench

import (
	"testing"
	"time"
)

// BenchmarkBoxExecRatio is a persistent bwrap box's launch (box exec -y BOX -- true:
// the stamp read, the lock, the same resolver as box run, the home check) over bare
// bwrap on box run's argv, alternating in one loop.
func BenchmarkBoxExecRatio(b *testing.B) {
	r := setup(b)
	if out, err := r.cmd(r.box, "new", "--backend", "bwrap", "--name", "bench").CombinedOutput(); err != nil {
		b.Fatalf("box new: %v\n%s", err, out)
	}
	var tBox, tBare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r.runBare(b)
		t1 := time.Now()
		if out, err := r.cmd(r.box, "exec", "-y", "bench", "--", "true").CombinedOutput(); err != nil {
			b.Fatalf("box exec: %v\n%s", err, out)
		}
		tBox += time.Since(t1)
		tBare += t1.Sub(t0)
	}
	b.ReportMetric(float64(tBox)/float64(tBare), "box/bare")
	b.ReportMetric(float64(tBare.Microseconds())/float64(b.N), "bare-µs/op")
	b.ReportMetric(float64(tBox.Microseconds())/float64(b.N), "box-µs/op")
}
