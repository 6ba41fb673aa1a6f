package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The start-up figures of issue 24, each as a ratio of runs alternated in one loop (so
// both sides see the same machine):
//
//	go test -run '^$' -bench 'Startup|Version|Phases' -benchtime 30x ./bench
//
// BenchmarkStartup: box run -y -q -- true over bare bwrap given box's own argv (the same
// mounts, seccomp filter and namespaces: "box/bare", goal at most 1.5) and over
// firejail --quiet --noprofile true ("box/firejail", goal at most 1), in a plain
// directory and in a repository holding 50 nested repositories. With $BOX_BENCH_BASELINE
// naming another box binary (e.g. main's, built as setup builds it), it runs in the same
// loop too: "box/baseline" is this tree's box over it. Each ratio is given twice: of wall
// time, and of CPU time ("-cpu": user+system of the process and what it reaped, cpuOf).
// The floors (floor_test.go) are a Go program starting bwrap with the same argv and
// nothing else, alone and with box's libraries linked: "floor+deps/bare" is the nearest
// to bare bwrap box can come while it is a Go program linking what it links.
func BenchmarkStartup(b *testing.B) {
	for _, tree := range []string{"plain", "repos=50"} {
		b.Run(tree, func(b *testing.B) {
			r := setup(b)
			if tree != "plain" {
				plantRepos(b, r, 50)
			}
			firejail, _ := exec.LookPath("firejail")
			if firejail == "" {
				b.Log("firejail is not installed: box/firejail not measured")
			}
			run := func(what, name string, args ...string) func() time.Duration {
				return func() time.Duration {
					c := r.cmd(name, args...)
					if out, err := c.CombinedOutput(); err != nil {
						b.Fatalf("%s: %v\n%s", what, err, out)
					}
					return cpuOf(c)
				}
			}
			ss := sides{
				{name: "box", run: run("box run", r.box, "run", "-y", "-q", "--", "true")},
				{name: "bare", run: func() time.Duration { return r.runBare(b) }},
			}
			ss = append(ss, floorSides(b, r)...) // floor_test.go
			if firejail != "" {
				ss = append(ss, &side{name: "firejail", run: run("firejail", firejail, "--quiet", "--noprofile", "true")})
			}
			if base := os.Getenv("BOX_BENCH_BASELINE"); base != "" {
				ss = append(ss, &side{name: "baseline", run: run("baseline box run", base, "run", "-y", "-q", "--", "true")})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ss.round(i)
			}
			ss.report(b)
			reportFloors(b, ss)
		})
	}
}

// BenchmarkVersion: box --version over a hello-world Go binary built the same way
// (static, stripped): what every verb pays before it does anything (goal at most 1.5).
// "hello+deps/hello" is the same hello with every package box links: their
// initialisation alone.
// With $BOX_BENCH_BASELINE, that box's --version runs in the same loop too
// ("box/baseline"). Each ratio is given twice: of wall time, and of CPU time ("-cpu":
// user+system, cpuOf).
func BenchmarkVersion(b *testing.B) {
	r := setup(b)
	src := filepath.Join(r.dir, "hello")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644)
	hello := filepath.Join(r.dir, "hello-bin")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", hello, ".")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	run := func(name string, args ...string) func() time.Duration {
		return func() time.Duration {
			c := r.cmd(name, args...)
			if err := c.Run(); err != nil {
				b.Fatal(err)
			}
			return cpuOf(c)
		}
	}
	// The floor built with box's libraries (floor_test.go) says hello too: what linking
	// them costs before main, whatever the verb ("hello+deps/hello").
	withDeps := filepath.Join(r.dir, "floor-deps")
	buildFloor(b, withDeps, depsOverlay(b, r.dir))
	ss := sides{{name: "box", run: run(r.box, "--version")}, {name: "hello", run: run(hello)},
		{name: "hello+deps", run: run(withDeps, "hello")}}
	if base := os.Getenv("BOX_BENCH_BASELINE"); base != "" {
		ss = append(ss, &side{name: "baseline", run: run(base, "--version")})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ss.round(i)
	}
	ss.report(b)
	b.ReportMetric(float64(ss[2].wall)/float64(ss[1].wall), "hello+deps/hello")
	b.ReportMetric(float64(ss[2].cpu)/float64(ss[1].cpu), "hello+deps/hello-cpu")
}

// BenchmarkPhases: where box run -y -q -- true spends its time, from a test build whose
// phase marks print (-tags boxphase, BOX_PHASES=1; release builds hold no-ops): the
// median milliseconds of each step over b.N runs, printed as a table ("exec" is the exec
// to the phase package's init, "teardown" box's last mark, its own "exit", to the wait's
// return: the process's exit). With
// $BOX_BENCH_PHASE_BASELINE naming another such build (e.g. main's), both are alternated
// and tabled side by side.
//
// Run in a plain directory and in the repository of BenchmarkStartup holding 50 nested
// repositories, where the protected set's scan and the audit's walks have the most to do.
func BenchmarkPhases(b *testing.B) {
	for _, tree := range []string{"plain", "repos=50"} {
		b.Run(tree, func(b *testing.B) {
			r := setup(b)
			if tree != "plain" {
				plantRepos(b, r, 50)
			}
			benchPhases(b, r)
		})
	}
}

func benchPhases(b *testing.B, r *rig) {
	bin := filepath.Join(r.dir, "box-phase")
	build := exec.Command("go", "build", "-tags", "boxphase", "-trimpath", "-ldflags", "-s -w", "-o", bin, "../cmd/box")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	bins := []string{bin}
	if base := os.Getenv("BOX_BENCH_PHASE_BASELINE"); base != "" {
		bins = []string{base, bin}
	}
	runs := make([][]phaseRun, len(bins))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, bn := range bins {
			runs[j] = append(runs[j], r.phases(b, bn))
		}
	}
	b.StopTimer()
	var names []string
	// In the order of the build measured (the last), the baseline's own marks after.
	for j := len(runs) - 1; j >= 0; j-- {
		for _, p := range runs[j][0] {
			if !slices.Contains(names, p.name) {
				names = append(names, p.name)
			}
		}
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n%-24s", "phase (median ms)")
	for _, bn := range bins {
		fmt.Fprintf(&tab, " %12s", filepath.Base(bn))
	}
	tab.WriteByte('\n')
	for _, n := range names {
		fmt.Fprintf(&tab, "%-24s", n)
		for _, run := range runs {
			fmt.Fprintf(&tab, " %12.1f", medianOf(run, n))
		}
		tab.WriteByte('\n')
	}
	fmt.Print(tab.String()) // b.Log would truncate the table
	b.ReportMetric(medianOf(runs[len(runs)-1], "total"), "total-ms")
}

type phaseRun []struct {
	name string
	ms   float64
}

// phases runs one box run -y -q -- true of a boxphase build and returns its steps.
func (r *rig) phases(b *testing.B, bin string) phaseRun {
	c := r.cmd(bin, "run", "-y", "-q", "--", "true")
	c.Env = append(c.Env, "BOX_PHASES=1")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	t0 := time.Now().UnixNano()
	if err := c.Run(); err != nil {
		b.Fatalf("%v\n%s", err, stderr.String())
	}
	end := time.Now().UnixNano()
	var out phaseRun
	add := func(name string, ns int64) {
		out = append(out, struct {
			name string
			ms   float64
		}{name, float64(ns) / 1e6})
	}
	last := t0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "box-phase" {
			continue
		}
		at, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		name := f[1]
		if name == "init" {
			name = "exec"
		}
		add(name, at-last)
		last = at
	}
	if len(out) == 0 {
		b.Fatalf("no phase marks:\n%s", stderr.String())
	}
	add("teardown", end-last) // not "exit": that is box's own last mark

	add("total", end-t0)
	return out
}

// side is one command of a comparison, with its summed wall and CPU time.
type side struct {
	name      string
	run       func() time.Duration // runs it once, returning its CPU time (cpuOf)
	wall, cpu time.Duration
}

// sides are the commands compared; the first is box, which every ratio is of.
type sides []*side

// round runs each side once, starting with side i mod n: no side always follows the
// same one (the one run just after another Go binary finds more of the machine's caches
// warm; in a fixed order two identical binaries differed by 5-10%).
func (ss sides) round(i int) {
	for j := range ss {
		s := ss[(i+j)%len(ss)]
		t0 := time.Now()
		s.cpu += s.run()
		s.wall += time.Since(t0)
	}
}

// report gives box over each other side, of wall and of CPU time ("box/bare",
// "box/bare-cpu"), and each side's mean per run ("bare-µs/op", "bare-cpu-µs/op").
func (ss sides) report(b *testing.B) {
	box := ss[0]
	for _, s := range ss[1:] {
		b.ReportMetric(float64(box.wall)/float64(s.wall), "box/"+s.name)
		b.ReportMetric(float64(box.cpu)/float64(s.cpu), "box/"+s.name+"-cpu")
	}
	for _, s := range ss {
		b.ReportMetric(float64(s.wall.Microseconds())/float64(b.N), s.name+"-µs/op")
		b.ReportMetric(float64(s.cpu.Microseconds())/float64(b.N), s.name+"-cpu-µs/op")
	}
}

func medianOf(runs []phaseRun, name string) float64 {
	var v []float64
	for _, run := range runs {
		for _, p := range run {
			if p.name == name {
				v = append(v, p.ms)
			}
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return v[len(v)/2]
}
