package incus_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
)

// The benchmarks share one lab, started on first use and stopped after all tests.
var (
	benchOnce sync.Once
	benchLab  *incuslab.Lab
	benchErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchLab != nil {
		if err := benchLab.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench lab teardown:", err)
		}
	}
	os.Exit(code)
}

func sharedLab(b *testing.B) *incuslab.Lab {
	b.Helper()
	incuslab.Require(b)
	benchOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		benchLab, benchErr = incuslab.Launch(ctx, incuslab.Options{Logf: b.Logf})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchLab
}

// ensure creates (and optionally starts) a tagged container once per lab.
func ensure(b *testing.B, c *incus.Client, name string, start bool) {
	b.Helper()
	ctx := context.Background()
	if _, _, err := c.Instance(ctx, name); err == nil {
		return
	}
	req, err := incus.MintRequest(incus.Mint{Name: name, Profile: incuslab.Profile, Image: incuslab.ImageAlias,
		CPU: "1", Memory: "256MiB", Disk: "1GiB", Pool: incuslab.Pool, Template: "blank", User: "dev",
		Created: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, req); err != nil {
		b.Fatal(err)
	}
	if start {
		if err := c.Start(ctx, name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecTrue compares the client's exec with the incus CLI's (a process each
// time, as `box exec` would be).
func BenchmarkExecTrue(b *testing.B) {
	lab := sharedLab(b)
	c := lab.Client
	ensure(b, c, "bench", true)
	ctx := context.Background()
	b.Run("client", func(b *testing.B) {
		for b.Loop() {
			if code, err := c.Exec(ctx, "bench", incus.Exec{Command: []string{"true"}}); err != nil || code != 0 {
				b.Fatal(code, err)
			}
		}
	})
	b.Run("incus-cli", func(b *testing.B) {
		for b.Loop() {
			if out, err := lab.Incus("exec", "bench", "--", "true").CombinedOutput(); err != nil {
				b.Fatal(err, string(out))
			}
		}
	})
}

// BenchmarkList compares listing boxes (decode and tag filter) with one raw
// GET /1.0/instances?recursion=1 read to the end. BOX_BENCH_INSTANCES sets how many
// instances exist (default 50).
func BenchmarkList(b *testing.B) {
	lab := sharedLab(b)
	c := lab.Client
	n := 50
	if v, err := strconv.Atoi(os.Getenv("BOX_BENCH_INSTANCES")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	start := time.Now()
	for i := range n {
		// Empty instances (source "none", no rootfs): a list reads the database only,
		// and 50 image copies would not fit the lab's tmpfs pool.
		name := fmt.Sprintf("list%02d", i)
		if _, _, err := c.Instance(ctx, name); err == nil {
			continue
		}
		req := incus.InstancesPost{Name: name, Type: incus.TypeContainer, Source: incus.InstanceSource{Type: "none"},
			Profiles: []string{incuslab.Profile},
			Config:   map[string]string{incus.KeyBox: "1", incus.KeyUser: "dev", incus.KeyTemplate: "blank"}}
		if err := c.Create(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d instances ready in %s", n, time.Since(start).Round(time.Millisecond))
	b.Run("client-ListBoxes", func(b *testing.B) {
		for b.Loop() {
			if bs, err := c.ListBoxes(ctx); err != nil || len(bs) < n {
				b.Fatal(len(bs), err)
			}
		}
	})
	raw := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", lab.Socket)
	}}}
	b.Run("raw-GET", func(b *testing.B) {
		for b.Loop() {
			resp, err := raw.Get("http://unix.socket/1.0/instances?recursion=1")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
