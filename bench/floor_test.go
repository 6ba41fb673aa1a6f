package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// floorSides are BenchmarkStartup's floors (floor/main.go): bwrap given box's argv by a
// Go program that does nothing else, built alone ("floor") and with every package box
// links added ("floor+deps", whose initialisation box pays whatever the verb). Their
// ratios over bare bwrap are the nearest a Go launcher, and one with box's libraries,
// can come ("floor/bare", "floor+deps/bare", reported by reportFloors).
func floorSides(b *testing.B, r *rig) []*side {
	b.Helper()
	plain := filepath.Join(r.dir, "floor")
	withDeps := filepath.Join(r.dir, "floor-deps")
	buildFloor(b, plain, "")
	buildFloor(b, withDeps, depsOverlay(b, r.dir))
	run := func(bin string) func() time.Duration {
		return func() time.Duration {
			c := r.cmd(bin, append([]string{r.filter}, r.bareArgs...)...)
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", bin, err, out)
			}
			return cpuOf(c)
		}
	}
	return []*side{{name: "floor", run: run(plain)}, {name: "floor+deps", run: run(withDeps)}}
}

func buildFloor(b *testing.B, out, overlay string) {
	args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	build := exec.Command("go", append(args, "./floor")...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build floor: %v\n%s", err, out)
	}
}

// depsOverlay writes a file importing, for their side effects, every package cmd/box
// depends on that a program outside them may import (not box's own, not internal ones),
// and returns a go build -overlay adding it to floor: the list is taken from go list
// each run, so it cannot go stale.
func depsOverlay(b *testing.B, dir string) string {
	out, err := exec.Command("go", "list", "-deps", "../cmd/box").Output()
	if err != nil {
		b.Fatalf("go list -deps ../cmd/box: %v", err)
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	n := 0
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/heavy-duty/box") || strings.HasPrefix(p, "vendor/") ||
			strings.Contains(p, "internal") || p == "unsafe" || strings.HasPrefix(p, "runtime") {
			continue
		}
		src.WriteString("\t_ \"" + p + "\"\n")
		n++
	}
	src.WriteString(")\n")
	if n < 20 {
		b.Fatalf("go list -deps ../cmd/box named %d importable packages: too few to be box's", n)
	}
	deps := filepath.Join(dir, "deps.go")
	if err := os.WriteFile(deps, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	abs, err := filepath.Abs("floor/deps.go")
	if err != nil {
		b.Fatal(err)
	}
	j, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: deps}})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, j, 0o644); err != nil {
		b.Fatal(err)
	}
	return overlay
}

// reportFloors gives each floor over bare bwrap, of wall and CPU time.
func reportFloors(b *testing.B, ss sides) {
	var bare *side
	for _, s := range ss {
		if s.name == "bare" {
			bare = s
		}
	}
	for _, s := range ss {
		if strings.HasPrefix(s.name, "floor") && bare != nil {
			b.ReportMetric(float64(s.wall)/float64(bare.wall), s.name+"/bare")
			b.ReportMetric(float64(s.cpu)/float64(bare.cpu), s.name+"/bare-cpu")
		}
	}
}
