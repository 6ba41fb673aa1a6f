package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// BenchmarkNixPackages: box run -y -- true with a profile of three Nix packages (a local
// flake: no binary cache is reachable here), cold (the package cache emptied before
// each run: nix evaluates the flake; the store paths are already built) and warm (the
// cache answers), against the same run without packages, in one loop.
func BenchmarkNixPackages(b *testing.B) {
	testenv.NixDaemon(b)
	r := setup(b)
	flake := filepath.Join(r.dir, "tools")
	os.MkdirAll(flake, 0o755)
	var pkgs string
	for _, n := range []string{"one", "two", "three"} {
		pkgs += fmt.Sprintf(`%s = derivation { name = "bench-%s"; system = "x86_64-linux"; builder = "/bin/sh"; args = [ "-c" "/bin/mkdir -p $out/bin; /bin/ln -s /bin/true $out/bin/%s" ]; };
`, n, n, n)
	}
	os.WriteFile(filepath.Join(flake, "flake.nix"), []byte("{ outputs = { self }: { packages.x86_64-linux = {\n"+pkgs+"}; }; }\n"), 0o644)
	prof := filepath.Join(r.home, ".config/box/profiles")
	os.MkdirAll(prof, 0o755)
	os.WriteFile(filepath.Join(prof, "pk.toml"), []byte(`packages = ["path:`+flake+`#one", "path:`+flake+`#two", "path:`+flake+`#three"]`+"\n"), 0o644)
	filepath.Walk(r.home, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, r.uid, r.gid) })
	cache := filepath.Join(r.home, ".local/share/box/packages")
	run := func(args ...string) {
		if out, err := r.cmd(r.box, append([]string{"run", "-y"}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	run("--profile", "pk", "--", "true") // builds them once
	var tPlain, tWarm, tCold time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		run("--", "true")
		t1 := time.Now()
		run("--profile", "pk", "--", "true")
		t2 := time.Now()
		os.RemoveAll(cache)
		t3 := time.Now()
		run("--profile", "pk", "--", "true")
		tCold += time.Since(t3)
		tPlain += t1.Sub(t0)
		tWarm += t2.Sub(t1)
	}
	b.ReportMetric(float64(tWarm)/float64(tPlain), "warm/plain")
	b.ReportMetric(float64(tCold)/float64(tPlain), "cold/plain")
	b.ReportMetric(float64(tPlain.Microseconds())/float64(b.N), "plain-µs/op")
	b.ReportMetric(float64(tWarm.Microseconds())/float64(b.N), "warm-µs/op")
	b.ReportMetric(float64(tCold.Microseconds())/float64(b.N), "cold-µs/op")
}

// BenchmarkNixStore: box run -y -- true with nix = "store" (box's helper layers the
// project's store before bwrap) against the same run without, in one loop.
func BenchmarkNixStore(b *testing.B) {
	testenv.NixDaemon(b)
	r := setup(b)
	prof := filepath.Join(r.home, ".config/box/profiles")
	os.MkdirAll(prof, 0o755)
	os.WriteFile(filepath.Join(prof, "st.toml"), []byte("nix = \"store\"\n"), 0o644)
	filepath.Walk(r.home, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, r.uid, r.gid) })
	run := func(args ...string) {
		if out, err := r.cmd(r.box, append([]string{"run", "-y"}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	var tPlain, tStore time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		run("--", "true")
		t1 := time.Now()
		run("--profile", "st", "--", "true")
		tStore += time.Since(t1)
		tPlain += t1.Sub(t0)
	}
	b.ReportMetric(float64(tStore)/float64(tPlain), "store/plain")
}
