package bwrap_test

// Cost of the unix-socket mediation: `box run -y -- true` (launch to exit) and 500
// connects inside the sandbox (unix, to a server of its own; TCP, on its loopback), each
// with the mediation on and off in the same test build; and 2000 UDP sends on the
// sandbox's loopback (sendmsg, sendto with an address, send without one) with box making
// the sends and with them continued (BOX_UNSAFE_OFF=socket-sends, the code before). Run
// (root):
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

const udpLoop = `
import socket, time
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 0))
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a = r.getsockname()
def drain():
    r.setblocking(False)
    try:
        while True: r.recv(64)
    except BlockingIOError:
        pass
for name, f in (("sendmsg", lambda: s.sendmsg([b"x"], [], 0, a)), ("sendto", lambda: s.sendto(b"x", a)),
                ("send", lambda: s.send(b"x"))):
    if name == "send": s.connect(a)
    t0 = time.perf_counter()
    for i in range(2000): f()
    print(name, (time.perf_counter() - t0) / 2000 * 1e6)
    drain()
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
	before := newWorld(b)
	before.box = box
	before.env = append(before.env, "BOX_UNSAFE_OFF=socket-sends")
	udp := func(w *world) map[string]float64 {
		w.write(filepath.Join(w.proj, "udp.py"), udpLoop)
		r := w.sh("python3 udp.py")
		m := map[string]float64{}
		for _, l := range strings.Split(r.stdout, "\n") {
			k, v, _ := strings.Cut(l, " ")
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				m[k] = f
			}
		}
		if len(m) != 3 {
			b.Fatalf("udp.py: %q %q", r.stdout, r.stderr)
		}
		return m
	}
	for i := 0; i < b.N; i++ {
		var lBefore, lAfter []float64
		for range 15 {
			for _, c := range []struct {
				w *world
				d *[]float64
			}{{before, &lBefore}, {on, &lAfter}} {
				start := time.Now()
				if r := c.w.run("run", "-y", "--", "true"); r.code != 0 {
					b.Fatalf("box run -y -- true: %d\n%s", r.code, r.stderr)
				}
				*c.d = append(*c.d, float64(time.Since(start).Microseconds())/1000)
			}
		}
		slices.Sort(lBefore)
		slices.Sort(lAfter)
		udp(before)
		udp(on)
		udp(off)
		uO, uB, uA := udp(off), udp(before), udp(on)
		b.Logf("sends continued -> made by box: box run -y -- true (median of 15) %.1f -> %.1f ms (x%.3f); UDP per send (unmediated / continued / made by box): sendmsg %.1f / %.1f / %.1f us, sendto with an address %.1f / %.1f / %.1f us, send %.1f / %.1f / %.1f us",
			lBefore[7], lAfter[7], lAfter[7]/lBefore[7], uO["sendmsg"], uB["sendmsg"], uA["sendmsg"], uO["sendto"], uB["sendto"], uA["sendto"], uO["send"], uB["send"], uA["send"])

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
