package bwrap_test

// Cost of the unix-socket mediation: `box run -y -- true` (launch to exit) and 500
// connects inside the sandbox (unix, to a server of its own; TCP, on its loopback), each
// with the mediation on and off in the same test build. Run (root):
//   go test -run '^$' -bench UnixSockets -benchtime 1x ./backend/bwrap/

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

const connectLoop = `
import socket, threading, time, sys
def serve(l):
    while True:
        c, _ = l.accept(); c.close()
u = socket.socket(socket.AF_UNIX); u.bind("./bench.sock"); u.listen(64)
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(64)
for l in (u, t):
    threading.Thread(target=serve, args=(l,), daemon=True).start()
for fam, addr in ((socket.AF_UNIX, "./bench.sock"), (socket.AF_INET, t.getsockname())):
    s0 = time.perf_counter()
    for i in range(500):
        s = socket.socket(fam); s.connect(addr); s.close()
    print(fam == socket.AF_UNIX and "unix" or "tcp", (time.perf_counter() - s0) / 500 * 1e6)
`

func BenchmarkUnixSockets(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireTool(b, "python3")
	on, off := newWorld(b), newWorld(b)
	box := boxBuild(b, "boxunsafe")
	on.box, off.box = box, box
	off.env = append(off.env, "BOX_UNSAFE_OFF=sockets")
	// Interleaved, off then on, so neither pays the caches' warming alone.
	launches := func() (offMs, onMs float64) {
		var dOff, dOn []float64
		for range 15 {
			for _, c := range []struct {
				w *world
				d *[]float64
			}{{off, &dOff}, {on, &dOn}} {
				start := time.Now()
				if r := c.w.run("run", "-y", "--", "true"); r.code != 0 {
					b.Fatalf("box run -y -- true: %d\n%s", r.code, r.stderr)
				}
				*c.d = append(*c.d, float64(time.Since(start).Microseconds())/1000)
			}
		}
		slices.Sort(dOff)
		slices.Sort(dOn)
		return dOff[len(dOff)/2], dOn[len(dOn)/2]
	}
	connects := func(w *world) (unixUs, tcpUs float64) {
		w.write(filepath.Join(w.proj, "bench.py"), connectLoop)
		r := w.sh("rm -f bench.sock; python3 bench.py")
		for _, l := range strings.Split(r.stdout, "\n") {
			k, v, _ := strings.Cut(l, " ")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "unix":
				unixUs = f
			case "tcp":
				tcpUs = f
			}
		}
		if unixUs == 0 || tcpUs == 0 {
			b.Fatalf("bench.py: %q %q", r.stdout, r.stderr)
		}
		return
	}
	for i := 0; i < b.N; i++ {
		lOff, lOn := launches()
		connects(off) // warm both once
		connects(on)
		uOff, tOff := connects(off)
		uOn, tOn := connects(on)
		b.ReportMetric(lOn/lOff, "launch-ratio")
		b.Logf("box run -y -- true (median of 15): off %.1f ms, on %.1f ms (x%.3f); connect: unix %.0f -> %.0f us, tcp %.0f -> %.0f us",
			lOff, lOn, lOn/lOff, uOff, uOn, tOff, tOn)
	}
}
