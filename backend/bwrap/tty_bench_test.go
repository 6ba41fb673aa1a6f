package bwrap_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkTTYRelay: cat of 100 MiB on a terminal, directly (the host's cat on the
// test's pty) and through box's relay (box run -- cat on the same kind of pty). Each is
// timed from the first byte to the last on the master, so the sandbox's start is not in
// it. The two run back to back in each iteration, their order alternating, so a machine
// whose load changes from second to second (a shared CI host) weighs on both alike; the
// reported ratio is the median of the iterations' relay/direct throughputs (goal >= 0.8).
// cpu-ms is what each spends in all (cat, and for the relay box and bwrap too), from the
// kernel's accounting: steadier than throughput on a loaded machine.
//
// peer/direct is util-linux's script (script -qfc 'cat FILE' /dev/null, a C relay of its
// own pty) on the same harness: a ceiling for any relay that adds a second pty hop on
// this machine. peer-cpu-ms is script's and cat's.
//
// BOX_BENCH_BASE=/path/to/an/older/box adds that binary's relay to every iteration
// (base/direct, base-cpu-ms): a change's before and after from the same run.
func BenchmarkTTYRelay(b *testing.B) {
	w := newWorld(b)
	const size = 100 << 20
	file := filepath.Join(w.proj, "big")
	if err := os.WriteFile(file, bytes.Repeat([]byte("x"), size), 0o644); err != nil {
		b.Fatal(err)
	}
	os.Chown(file, w.uid, w.gid)
	direct := func() *exec.Cmd {
		c := w.cmd()
		c.Path, c.Args = "/bin/cat", []string{"cat", file}
		return c
	}
	relay := func() *exec.Cmd { return w.cmd("run", "-q", "-y", "--", "cat", file) }
	script, err := exec.LookPath("script") // util-linux (Debian's bsdutils: essential)
	if err != nil {
		b.Fatalf("the peer relay: %v", err)
	}
	peer := func() *exec.Cmd {
		c := w.cmd()
		c.Path, c.Args = script, []string{"script", "-qfc", "cat " + file, "/dev/null"}
		return c
	}
	baseBox := os.Getenv("BOX_BENCH_BASE")
	base := func() *exec.Cmd {
		c := w.cmd("run", "-q", "-y", "--", "cat", file)
		c.Path, c.Args[0] = baseBox, baseBox
		return c
	}
	// once runs c on a fresh pty and returns its throughput (MB/s) and CPU time.
	once := func(c *exec.Cmd) (float64, time.Duration) {
		master, slave := openPTY(b)
		unix.Fchown(int(slave.Fd()), w.uid, w.gid)
		c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
		c.SysProcAttr.Setsid, c.SysProcAttr.Setctty = true, true
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		slave.Close()
		buf := make([]byte, 64<<10)
		got := 0
		var start time.Time
		for got < size {
			n, err := master.Read(buf)
			if n > 0 && got == 0 {
				start = time.Now()
			}
			got += bytes.Count(buf[:n], []byte("x"))
			if err != nil {
				break
			}
		}
		elapsed := time.Since(start)
		go func() {
			for {
				if _, err := master.Read(buf); err != nil {
					return
				}
			}
		}()
		c.Wait()
		master.Close()
		if got < size {
			b.Fatalf("%s: read %d of %d bytes", c.Args[0], got, size)
		}
		return float64(size) / elapsed.Seconds() / 1e6, c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	}
	var ratios, dRates, rRates, dCPU, rCPU, pRatios, pCPU, bRatios, bCPU []float64
	for i := 0; i < b.N; i++ {
		if baseBox != "" {
			// Between the two it is compared with, in the same alternating order.
			bd, _ := once(direct())
			br, bc := once(base())
			bRatios, bCPU = append(bRatios, br/bd), append(bCPU, float64(bc.Milliseconds()))
		}
		// The three in turn, each iteration starting one further along.
		var rate [3]float64
		var cpu [3]time.Duration
		makers := [3]func() *exec.Cmd{direct, relay, peer}
		for k := range 3 {
			j := (i + k) % 3
			rate[j], cpu[j] = once(makers[j]())
		}
		d, r, p := rate[0], rate[1], rate[2]
		dc, rc, pc := cpu[0], cpu[1], cpu[2]
		pRatios, pCPU = append(pRatios, p/d), append(pCPU, float64(pc.Milliseconds()))
		ratios, dRates, rRates = append(ratios, r/d), append(dRates, d), append(rRates, r)
		dCPU, rCPU = append(dCPU, float64(dc.Milliseconds())), append(rCPU, float64(rc.Milliseconds()))
	}
	b.ReportMetric(median(ratios), "relay/direct")
	b.ReportMetric(median(dRates), "direct-MB/s")
	b.ReportMetric(median(rRates), "relay-MB/s")
	b.ReportMetric(median(dCPU), "direct-cpu-ms")
	b.ReportMetric(median(rCPU), "relay-cpu-ms")
	b.ReportMetric(median(pRatios), "peer/direct")
	b.ReportMetric(median(pCPU), "peer-cpu-ms")
	if baseBox != "" {
		b.ReportMetric(median(bRatios), "base/direct")
		b.ReportMetric(median(bCPU), "base-cpu-ms")
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkRunTrue: box run -y -- true without a terminal (stdin /dev/null, output to
// pipes): what every scripted run pays.
func BenchmarkRunTrue(b *testing.B) {
	w := newWorld(b)
	for i := 0; i < b.N; i++ {
		c := w.cmd("run", "-q", "-y", "--", "true")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: c.SysProcAttr.Credential}
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}
