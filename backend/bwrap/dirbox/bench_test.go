package dirbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// makeHome writes a home of about 1 GiB: 240 files of 4 MiB (tools, caches) and 4096
// small files of 16 KiB (agent state, configs) in 64 directories.
func makeHome(b *testing.B, dir string) int64 {
	b.Helper()
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	var total int64
	for i := 0; i < 240; i++ {
		p := filepath.Join(dir, ".local/share/tool", fmt.Sprintf("blob-%03d", i))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, big, 0o600); err != nil {
			b.Fatal(err)
		}
		total += int64(len(big))
	}
	small := big[:16<<10]
	for i := 0; i < 4096; i++ {
		p := filepath.Join(dir, fmt.Sprintf(".claude/projects/d%02d/f%04d.json", i%64, i))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, small, 0o600); err != nil {
			b.Fatal(err)
		}
		total += int64(len(small))
	}
	return total
}

// BenchmarkCopyHome1GiB is the cost of a snapshot, restore or clone of a 1 GiB home:
// box's CopyTree (reflink where the file system clones, else a copy) beside 'cp -a
// --reflink=auto' on the same tree, in the same run. Run it alone:
//
//	go test -run '^$' -bench CopyHome -benchtime 3x ./backend/bwrap/dirbox
func BenchmarkCopyHome1GiB(b *testing.B) {
	base := b.TempDir()
	src := filepath.Join(base, "home")
	size := makeHome(b, src)
	b.Run("box", func(b *testing.B) {
		b.SetBytes(size)
		var st CopyStats
		for i := 0; i < b.N; i++ {
			dst := filepath.Join(base, fmt.Sprintf("box-%d", i))
			var err error
			if st, err = CopyTree(src, dst); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			os.RemoveAll(dst)
			b.StartTimer()
		}
		b.ReportMetric(float64(st.Reflinked), "reflinked-files")
	})
	b.Run("cp-a", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			dst := filepath.Join(base, fmt.Sprintf("cp-%d", i))
			if out, err := exec.Command("cp", "-a", "--reflink=auto", src, dst).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v %s", err, out)
			}
			b.StopTimer()
			os.RemoveAll(dst)
			b.StartTimer()
		}
	})
}
