package bwrap_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkTTYRelay: cat of 100 MiB on a terminal, directly (the host's cat on the
// test's pty) and through box's relay (box run -- cat on the same kind of pty). Each is
// timed from the first byte to the last on the master, so the sandbox's start is not in
// it; the ratio of the two MB/s is the relay's cost (goal: relay >= 0.8x direct).
func BenchmarkTTYRelay(b *testing.B) {
	w := newWorld(b)
	const size = 100 << 20
	file := filepath.Join(w.proj, "big")
	if err := os.WriteFile(file, bytes.Repeat([]byte("x"), size), 0o644); err != nil {
		b.Fatal(err)
	}
	os.Chown(file, w.uid, w.gid)
	for _, c := range []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"direct", func() *exec.Cmd {
			c := w.cmd()
			c.Path, c.Args = "/bin/cat", []string{"cat", file}
			return c
		}},
		{"relay", func() *exec.Cmd { return w.cmd("run", "-q", "-y", "--", "cat", file) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				master, slave := openPTY(b)
				unix.Fchown(int(slave.Fd()), w.uid, w.gid)
				cmd := c.cmd()
				cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
				cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty = true, true
				if err := cmd.Start(); err != nil {
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
						b.StartTimer()
					}
					got += bytes.Count(buf[:n], []byte("x"))
					if err != nil {
						break
					}
				}
				b.StopTimer()
				elapsed := time.Since(start)
				go func() {
					for {
						if _, err := master.Read(buf); err != nil {
							return
						}
					}
				}()
				cmd.Wait()
				master.Close()
				if got < size {
					b.Fatalf("read %d of %d bytes", got, size)
				}
				b.ReportMetric(float64(size)/elapsed.Seconds()/1e6, "MB/s-measured")
			}
		})
	}
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
