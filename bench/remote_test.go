package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
)

// box on a remote against the incus client on the same remote, over HTTPS:
//
//	go test -run '^$' -bench Remote -benchtime 30x ./bench
//
// The remote is a lab incusd listening on 192.0.2.10:8443 on a veth to a second
// (bare) lab's namespace, where box and incus run with one client configuration.
// BenchmarkRemote/list: `box list --remote lab` (50 boxes, one running: one request,
// recursion=2) against `incus list lab:`. BenchmarkRemote/exec: `box exec --remote lab
// B -- true` against `incus exec lab:B -- true`.
func BenchmarkRemote(b *testing.B) {
	incuslab.Require(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	local, err := incuslab.Launch(ctx, incuslab.Options{Bare: true, Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	lab, err := incuslab.Launch(ctx, incuslab.Options{Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	defer lab.Close()
	if err := local.Link(ctx, lab, "192.0.2.1/24", "192.0.2.10/24"); err != nil {
		b.Fatal(err)
	}
	if err := lab.ListenHTTPS(ctx, "192.0.2.10:8443"); err != nil {
		b.Fatal(err)
	}
	c := lab.Client

	dir := b.TempDir()
	box := buildBox(b, dir)
	cert, key, err := incus.NewClientCert("box-bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := c.TrustCertificate(ctx, "box-bench", cert); err != nil {
		b.Fatal(err)
	}
	server, err := lab.ServerCertPEM()
	if err != nil {
		b.Fatal(err)
	}
	conf := filepath.Join(dir, "incus")
	if err := (incus.ClientConfig{CertPEM: cert, KeyPEM: key,
		Remotes: map[string]incus.RemoteSpec{"lab": {Addr: "https://192.0.2.10:8443", ServerCertPEM: server}}}).Write(conf); err != nil {
		b.Fatal(err)
	}
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "INCUS_CONF=" + conf, "BOX_PLACEMENT_PROFILE=" + incuslab.Profile}
	run := func(b *testing.B, name string, args ...string) {
		cmd := exec.Command("nsenter", append([]string{"--net=" + local.NetNS, "--", name}, args...)...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
		}
	}

	seedBoxes(b, ctx, c)

	b.Run("list/box-list", func(b *testing.B) {
		for b.Loop() {
			run(b, box, "list", "--remote", "lab")
		}
	})
	b.Run("list/incus-list", func(b *testing.B) {
		for b.Loop() {
			run(b, "incus", "list", "lab:", "--format", "csv", "-c", "ns4")
		}
	})
	b.Run("exec/box-exec", func(b *testing.B) {
		for b.Loop() {
			run(b, box, "exec", "--remote", "lab", "bench", "--", "true")
		}
	})
	b.Run("exec/incus-exec", func(b *testing.B) {
		for b.Loop() {
			run(b, "incus", "exec", "lab:bench", "--", "true")
		}
	})
}
