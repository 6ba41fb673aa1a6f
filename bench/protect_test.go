package bench

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunNestedRepos: box run -y -- true in a repository holding N nested
// repositories (and a few thousand other directories the scan must read), alternated
// with bare bwrap given box's own argv (the same binds: "box/bare") and bare bwrap given
// that argv without the protected set's binds ("box/bare-unprotected"). The scan reads
// only directories, looking for .git entries, so start-up grows with the number of
// directories up to the scan's bound, not with the files.
func BenchmarkRunNestedRepos(b *testing.B) {
	for _, n := range []int{0, 50} {
		b.Run(fmt.Sprintf("repos=%d", n), func(b *testing.B) {
			r := setup(b)
			plantRepos(b, r, n)
			plain := unprotected(r.bareArgs, r.proj)
			binds := (len(r.bareArgs) - len(plain)) / 3
			var tBox, tBare, tPlain time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				r.runBare(b)
				t1 := time.Now()
				r.runBox(b)
				t2 := time.Now()
				runArgs(b, r, plain)
				tBare += t1.Sub(t0)
				tBox += t2.Sub(t1)
				tPlain += time.Since(t2)
			}
			b.ReportMetric(float64(tBox)/float64(tBare), "box/bare")
			b.ReportMetric(float64(tBox)/float64(tPlain), "box/bare-unprotected")
			b.ReportMetric(float64(tBox.Microseconds())/float64(b.N), "box-µs/op")
			b.ReportMetric(float64(tBare.Microseconds())/float64(b.N), "bare-µs/op")
			b.ReportMetric(float64(tPlain.Microseconds())/float64(b.N), "bare-unprotected-µs/op")
			b.ReportMetric(float64(binds), "protect-binds")
		})
	}
}

// unprotected drops the protected set's binds: every bind of a path strictly below the
// working directory.
func unprotected(args []string, wd string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if (args[i] == "--bind" || args[i] == "--ro-bind") && i+2 < len(args) && strings.HasPrefix(args[i+1], wd+"/") {
			i += 2
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// plantRepos makes r's project a repository holding n nested repositories and a thousand
// other directories, runs box once there (the permanent placeholders) and reads box's
// argv for that tree into r.bareArgs.
func plantRepos(b *testing.B, r *rig, n int) {
	b.Helper()
	git := func(dir string, args ...string) {
		c := r.cmd("git", args...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	git(r.proj, "init", "-q")
	for i := 0; i < n; i++ {
		d := filepath.Join(r.proj, "vendor", fmt.Sprintf("lib%02d", i))
		c := r.cmd("mkdir", "-p", filepath.Join(d, "src", "a", "b"))
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		git(d, "init", "-q")
	}
	// Directories without repositories, as a real tree has (node_modules...).
	if out, err := r.cmd("sh", "-c", "mkdir -p $(seq -f 'deps/d%g/x/y' 1 1000)").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	// One run makes the permanent placeholders; the temporary commondir ones are
	// made by hand so bare bwrap finds every source box binds.
	if out, err := r.cmd(r.box, "run", "-y", "--", "true").CombinedOutput(); err != nil {
		b.Fatalf("box run: %v\n%s", err, out)
	}
	if out, err := r.cmd("sh", "-c", `for g in .git vendor/*/.git; do [ -e "$g" ] && printf '.\n' > "$g/commondir"; done; true`).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	out, err := r.cmd(r.box, "run", "--dry-run", "--", "true").Output()
	if err != nil {
		b.Fatal(err)
	}
	r.bareArgs = parseDryRun(b, out)
}
