package bwrap_test

// Cost of the allowlist tier against the internet tier, in the same run, in the lab:
// time to first byte of a small HTTP GET (connection set-up: DNS, connect, and for the
// allowlist the proxy's name check, resolve and dial) and the throughput of a 100 MiB
// download, both measured by curl inside the sandbox. Run:
//   go test -run '^$' -bench AllowlistVsInternet -benchtime 1x ./cmd/box/   (root)

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

const benchGets = 30

func BenchmarkAllowlistVsInternet(b *testing.B) {
	testenv.RequireRoot(b)
	for _, tool := range append(lab.Tools, "curl", "pasta", "bwrap") {
		testenv.RequireTool(b, tool)
	}
	w := newWorld(b)
	l := lab.New(b)
	script := fmt.Sprintf(`for i in $(seq %d); do curl -s -o /dev/null -w 'ttfb %%{time_starttransfer}\n' http://allowed.test/; done
curl -s -o /dev/null -w 'speed %%{speed_download}\n' 'http://allowed.test/bytes?n=%d'
`, benchGets, 100<<20)
	type result struct{ ttfb, speed float64 }
	measure := func(args ...string) result {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c := l.UserCommand(ctx, w.uid, w.gid, append(append([]string{w.box, "run", "-y"}, args...), "--", "sh", "-c", script)...)
		c.Dir, c.Env = w.proj, append(w.env, "BOX_INTERNET_HELPER=pasta")
		out, err := c.Output()
		if err != nil {
			b.Fatalf("box run %v: %v\n%s", args, err, out)
		}
		var ttfbs []float64
		var r result
		for _, line := range strings.Split(string(out), "\n") {
			k, v, _ := strings.Cut(line, " ")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "ttfb":
				ttfbs = append(ttfbs, f*1000)
			case "speed":
				r.speed = f / (1 << 20)
			}
		}
		if len(ttfbs) != benchGets || r.speed == 0 {
			b.Fatalf("box run %v: unexpected output:\n%s", args, out)
		}
		slices.Sort(ttfbs)
		r.ttfb = ttfbs[len(ttfbs)/2]
		return r
	}
	for i := 0; i < b.N; i++ {
		in := measure("--network", "internet")
		al := measure("--network", "allowlist", "--allow", "allowed.test")
		b.ReportMetric(in.ttfb, "internet-ttfb-ms")
		b.ReportMetric(al.ttfb, "allowlist-ttfb-ms")
		b.ReportMetric(al.ttfb/in.ttfb, "ttfb-ratio")
		b.ReportMetric(in.speed, "internet-MiB/s")
		b.ReportMetric(al.speed, "allowlist-MiB/s")
		b.ReportMetric(al.speed/in.speed, "throughput-ratio")
		b.Logf("time to first byte (median of %d): internet %.2f ms, allowlist %.2f ms (x%.2f); 100 MiB: internet %.0f MiB/s, allowlist %.0f MiB/s (x%.2f)",
			benchGets, in.ttfb, al.ttfb, al.ttfb/in.ttfb, in.speed, al.speed, al.speed/in.speed)
	}
}
