// Package bench compares box with the bare tool it wraps, in the same run, as ratios.
// Run: go test -run '^$' -bench . -benchtime 200x ./bench (as root: the sandboxes run as
// the unprivileged test user). No wall time is asserted anywhere.
package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/seccomp"
	"github.com/heavy-duty/box/internal/testenv"
)

type rig struct {
	box, dir, home, proj string
	uid, gid             int
	env                  []string
	bareArgs             []string
	filter               string // box's compiled syscall filter, for the bare run's --seccomp fd
}

func setup(b *testing.B) *rig {
	b.Helper()
	testenv.RequireTool(b, "bwrap")
	uid, gid := testenv.User(b)
	dir, err := os.MkdirTemp("", "box-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	r := &rig{box: filepath.Join(dir, "box"), dir: dir, home: filepath.Join(dir, "home"), uid: uid, gid: gid}
	r.proj = filepath.Join(r.home, "proj")
	// Built as scripts/install.sh builds it: static, so start-up needs no dynamic loader.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", r.box, "../cmd/box")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	os.MkdirAll(r.proj, 0o755)
	filepath.Walk(r.home, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, uid, gid) })
	r.env = []string{"HOME=" + r.home, "PATH=/usr/bin:/bin", "TERM=xterm", "LANG=C.UTF-8"}
	// One real run makes the instance directory the bare argv binds.
	if out, err := r.cmd(r.box, "run", "-y", "--", "true").CombinedOutput(); err != nil {
		b.Fatalf("box run: %v\n%s", err, out)
	}
	out, err := r.cmd(r.box, "run", "--dry-run", "--", "true").Output()
	if err != nil {
		b.Fatal(err)
	}
	r.bareArgs = parseDryRun(b, out)
	// The bare run gets the same filter at the same fd: box's cost is compared with
	// bwrap doing the same work.
	f, err := seccomp.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	prog, err := f.Bytes()
	if err != nil {
		b.Fatal(err)
	}
	r.filter = filepath.Join(dir, "filter.bpf")
	if err := os.WriteFile(r.filter, prog, 0o644); err != nil {
		b.Fatal(err)
	}
	return r
}

func (r *rig) cmd(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir, c.Env = r.proj, r.env
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid)}}
	return c
}

// parseDryRun reads box's --dry-run listing back into bwrap's argv. The listing quotes
// with '...' only, so this is its exact inverse.
func parseDryRun(b *testing.B, out []byte) []string {
	var args []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSuffix(strings.TrimSpace(sc.Text()), " \\")
		if strings.HasPrefix(line, "env:") {
			break // the seccomp line and the protected set's listing follow
		}
		if line == "bwrap" {
			continue
		}
		for len(line) > 0 {
			line = strings.TrimLeft(line, " ")
			if line == "" {
				break
			}
			var tok strings.Builder
			for len(line) > 0 && line[0] != ' ' {
				if line[0] == '\'' {
					end := strings.IndexByte(line[1:], '\'')
					tok.WriteString(line[1 : 1+end])
					line = line[2+end:]
					if strings.HasPrefix(line, `\'`) {
						tok.WriteByte('\'')
						line = line[2:]
					}
					continue
				}
				tok.WriteByte(line[0])
				line = line[1:]
			}
			args = append(args, tok.String())
		}
	}
	if len(args) < 10 || args[len(args)-1] != "true" {
		b.Fatalf("could not read the dry run:\n%s", out)
	}
	return args
}

// runBare runs bwrap with box's own argv.
func (r *rig) runBare(b *testing.B) time.Duration { return runArgs(b, r, r.bareArgs) }

// runArgs runs bwrap with args, giving it the info fd (3), the block fd (4, already
// released: bare bwrap applies no limits) and the filter's fd (5) that box's argv names.
// It returns bwrap's CPU time (cpuOf).
func runArgs(b *testing.B, r *rig, args []string) time.Duration {
	rd, wr, _ := os.Pipe()
	br, bw, _ := os.Pipe()
	bw.Write([]byte{1})
	bw.Close()
	prog, err := os.Open(r.filter)
	if err != nil {
		b.Fatal(err)
	}
	c := r.cmd("bwrap", args...)
	c.ExtraFiles = []*os.File{wr, br, prog}
	if err := c.Run(); err != nil {
		b.Fatal(err)
	}
	wr.Close()
	rd.Close()
	prog.Close()
	br.Close()
	return cpuOf(c)
}

// cpuOf is the user and system CPU time of c's process once it has exited, its reaped
// descendants included (wait4's usage: bwrap's, the sandbox's, box's helpers'). Less
// noisy than wall time on a shared machine, whose other load delays a run but does not
// bill it.
func cpuOf(c *exec.Cmd) time.Duration {
	ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r *rig) runBox(b *testing.B) int64 { return r.runBinary(b, r.box) }

func (r *rig) runBinary(b *testing.B, box string) int64 {
	c := r.cmd(box, "run", "-y", "--", "true")
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	return c.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
}

func BenchmarkBareBwrap(b *testing.B) {
	r := setup(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.runBare(b)
	}
}

func BenchmarkBoxRun(b *testing.B) {
	r := setup(b)
	b.ResetTimer()
	var rss int64
	for i := 0; i < b.N; i++ {
		rss = max(rss, r.runBox(b))
	}
	b.ReportMetric(float64(rss), "peak-RSS-KiB")
}

// BenchmarkRunRatio alternates box and bare bwrap in one loop, so both see the same
// machine, and reports box's wall time over bare bwrap's (goal: at most 1.3).
func BenchmarkRunRatio(b *testing.B) {
	r := setup(b)
	var tBox, tBare time.Duration
	var rss int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r.runBare(b)
		t1 := time.Now()
		rss = max(rss, r.runBox(b))
		tBox += time.Since(t1)
		tBare += t1.Sub(t0)
	}
	b.ReportMetric(float64(tBox)/float64(tBare), "box/bare")
	b.ReportMetric(float64(tBare.Microseconds())/float64(b.N), "bare-µs/op")
	b.ReportMetric(float64(tBox.Microseconds())/float64(b.N), "box-µs/op")
	b.ReportMetric(float64(rss), "box-peak-RSS-KiB")
}

// BenchmarkRunBaseline alternates box with another build of box named by
// $BOX_BENCH_BASELINE (e.g. main's, built the same way), to measure what a change costs:
// box/baseline is the ratio of their wall times on the same machine in the same run.
func BenchmarkRunBaseline(b *testing.B) {
	base := os.Getenv("BOX_BENCH_BASELINE")
	if base == "" {
		b.Skip("set BOX_BENCH_BASELINE to a box binary to compare with")
	}
	r := setup(b)
	var tBox, tBase time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r.runBinary(b, base)
		t1 := time.Now()
		r.runBox(b)
		tBox += time.Since(t1)
		tBase += t1.Sub(t0)
	}
	b.ReportMetric(float64(tBox)/float64(tBase), "box/baseline")
	b.ReportMetric(float64(tBase.Microseconds())/float64(b.N), "baseline-µs/op")
	b.ReportMetric(float64(tBox.Microseconds())/float64(b.N), "box-µs/op")
}
