package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
)

// The vm verbs against the bare Incus API and CLI, on a real lab incusd:
//
//	go test -run '^$' -bench VM -benchtime 100x ./bench
//
// BenchmarkVMList: `box list` with 50 boxes (and one running, whose address box reads)
// against one raw GET /1.0/instances?recursion=1, in-process and as a curl process.
// BenchmarkVMExec: `box exec B -- true` against `incus exec B -- true`.
func BenchmarkVM(b *testing.B) {
	incuslab.Require(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	lab, err := incuslab.Launch(ctx, incuslab.Options{Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	defer lab.Close()
	c := lab.Client

	dir := b.TempDir()
	box := buildBox(b, dir)
	env := append([]string{"HOME=" + dir, "PATH=/usr/bin:/bin", "BOX_PLACEMENT_PROFILE=" + incuslab.Profile}, lab.Env()...)
	run := func(b *testing.B, name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
		}
	}

	// One running box with its user, for exec and for list's state call; 49 more.
	seedBoxes(b, ctx, c)

	raw := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", lab.Socket)
	}}}
	b.Run("list/box-list", func(b *testing.B) {
		for b.Loop() {
			run(b, box, "list")
		}
	})
	b.Run("list/raw-GET-in-process", func(b *testing.B) {
		for b.Loop() {
			resp, err := raw.Get("http://unix.socket/1.0/instances?recursion=1")
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("list/client-ListBoxes", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.ListBoxes(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("list/client-State", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.State(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("startup/box-version", func(b *testing.B) {
		for b.Loop() {
			run(b, box, "--version")
		}
	})
	b.Run("list/raw-GET-curl", func(b *testing.B) {
		for b.Loop() {
			run(b, "curl", "-sf", "-o", "/dev/null", "--unix-socket", lab.Socket, "http://unix.socket/1.0/instances?recursion=1")
		}
	})
	b.Run("list/incus-list", func(b *testing.B) {
		for b.Loop() {
			run(b, "incus", "list", "--format", "csv", "-c", "ns4")
		}
	})
	b.Run("exec/box-exec", func(b *testing.B) {
		for b.Loop() {
			run(b, box, "exec", "bench", "--", "true")
		}
	})
	b.Run("exec/incus-exec", func(b *testing.B) {
		for b.Loop() {
			run(b, "incus", "exec", "bench", "--", "true")
		}
	})
}

// buildBox builds the box binary into dir.
func buildBox(b *testing.B, dir string) string {
	b.Helper()
	box := filepath.Join(dir, "box")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", box, "../cmd/box")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return box
}

// seedBoxes makes the benchmarks' boxes on a lab: "bench", running, with its user (for
// exec and list's state call), and 49 empty ones (source none: the database only).
func seedBoxes(b *testing.B, ctx context.Context, c *incus.Client) {
	b.Helper()
	// One running box with its user, for exec and for list's state call.
	req, err := incus.MintRequest(incus.Mint{Name: "bench", Profile: incuslab.Profile, Image: incuslab.ImageAlias,
		CPU: "1", Memory: "256MiB", Disk: "1GiB", Pool: incuslab.Pool, Template: "blank", User: "dev", Created: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, req); err != nil {
		b.Fatal(err)
	}
	if err := c.Start(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := c.WaitIPv4(ctx, "bench", "eth0"); err != nil {
		b.Fatal(err)
	}
	if code, err := c.Exec(ctx, "bench", incus.Exec{Command: []string{"useradd", "-m", "dev"}}); err != nil || code != 0 {
		b.Fatal(code, err)
	}
	for i := range 49 {
		req := incus.InstancesPost{Name: fmt.Sprintf("list%02d", i), Type: incus.TypeContainer, Source: incus.InstanceSource{Type: "none"},
			Profiles: []string{incuslab.Profile},
			Config:   map[string]string{incus.KeyBox: "1", incus.KeyUser: "dev", incus.KeyTemplate: "blank"}}
		if err := c.Create(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
