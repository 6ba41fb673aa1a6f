package inet

// Start-up cost of the internet tier against the same tools without box, in the same run:
// bare bwrap; bwrap + the helper run by hand (pasta returning once configured, slirp4netns
// signalling on --ready-fd); bwrap + Attach (helper + filter + link wait). The sandbox runs
// `true`. Run: go test -run '^$' -bench Startup ./backend/bwrap/inet/ (root, lab).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// cli-* run the box binary itself: `box run -y --network internet -- true`, the user's
// whole cost (process start, audit, instance directory, Attach), against bare-*.
// cli-allowlist is `box run -y --network allowlist --allow example.test -- true`.
var benchModes = []string{"bare-bwrap", "bare-pasta", "box-pasta", "cli-pasta", "bare-slirp4netns", "box-slirp4netns", "cli-slirp4netns", "cli-allowlist"}

func BenchmarkStartup(b *testing.B) {
	testenv.RequireRoot(b)
	for _, tool := range append(lab.Tools, "bwrap", "pasta", "slirp4netns") {
		testenv.RequireTool(b, tool)
	}
	l := lab.New(b)
	exe := userExe(b)
	boxBin := filepath.Join(filepath.Dir(exe), "box")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", boxBin, "../../../cmd/box")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build box: %v\n%s", err, out)
	}
	uid, gid := testenv.User(b)
	for _, mode := range benchModes {
		b.Run(mode, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			n := max(b.N, 10)
			cmd := l.UserCommand(ctx, uid, gid, exe)
			cmd.Env = append(cmd.Env, "BOXINET_ROLE=bench", "BOXINET_BENCH="+mode, "BOXINET_BENCH_N="+strconv.Itoa(n), "BOXINET_BOX="+boxBin)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("bench %s: %v: %s %s", mode, err, out, stderr.String())
			}
			var res benchResult
			if err := json.Unmarshal(out, &res); err != nil {
				b.Fatalf("bench %s output: %v: %s", mode, err, out)
			}
			b.ReportMetric(res.MedianMs, "median-ms")
			b.ReportMetric(res.P90Ms, "p90-ms")
			b.Logf("%s: median %.1f ms, p90 %.1f ms over %d", mode, res.MedianMs, res.P90Ms, n)
		})
	}
}

type benchResult struct {
	MedianMs, P90Ms float64
}

// benchRole runs one mode N times as the user and prints a benchResult.
func benchRole() int {
	mode := os.Getenv("BOXINET_BENCH")
	n, _ := strconv.Atoi(os.Getenv("BOXINET_BENCH_N"))
	var times []float64
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := benchOnce(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		times = append(times, ms(time.Since(start)))
	}
	slices.Sort(times)
	json.NewEncoder(os.Stdout).Encode(benchResult{times[len(times)/2], times[len(times)*9/10]})
	return 0
}

func benchOnce(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := []string{"PATH=/usr/bin:/bin"}
	if mode == "bare-bwrap" {
		argv := bwrapArgv("", "", "true")
		var plain []string
		for i := 0; i < len(argv); i++ {
			if argv[i] == "--info-fd" || argv[i] == "--block-fd" {
				i++
				continue
			}
			plain = append(plain, argv[i])
		}
		cmd := exec.CommandContext(ctx, "bwrap", plain...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bwrap: %v: %s", err, out)
		}
		return nil
	}
	kind, helper, _ := strings.Cut(mode, "-")
	dir, err := os.MkdirTemp("", "boxinet-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if kind == "cli" {
		proj := filepath.Join(dir, "proj")
		os.MkdirAll(proj, 0o755)
		net := []string{"--network", "internet"}
		if helper == "allowlist" {
			net, helper = []string{"--network", "allowlist", "--allow", lab.InternetName}, ""
		}
		cmd := exec.CommandContext(ctx, os.Getenv("BOXINET_BOX"), append(append([]string{"run", "-y"}, net...), "--", "true")...)
		cmd.Dir = proj
		cmd.Env = append(env, "HOME="+filepath.Join(dir, "home"), "BOX_INTERNET_HELPER="+helper)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("box run: %v: %s", err, out)
		}
		return nil
	}
	resolv := filepath.Join(dir, "resolv.conf")
	os.WriteFile(resolv, []byte(ResolvConf(Helper(helper))), 0o644)
	bw, pid, block, bwOut, err := startBwrap(ctx, bwrapArgv("", resolv, "true"), env)
	if err != nil {
		return err
	}
	defer block.Close()
	var release func() error
	if kind == "box" {
		opts, err := Options{Helper: Helper(helper)}.Resolve()
		if err != nil {
			return err
		}
		opts.HostAddrs, _ = HostAddrs()
		s, err := Attach(ctx, pid, opts)
		if err != nil {
			bw.Process.Kill()
			bw.Wait()
			return fmt.Errorf("%w (bwrap: %s)", err, bwOut.(fmt.Stringer).String())
		}
		release = s.Close
	} else {
		release, err = bareHelper(ctx, Helper(helper), pid)
		if err != nil {
			bw.Process.Kill()
			bw.Wait()
			return err
		}
	}
	block.Write([]byte{1})
	werr := bw.Wait()
	release()
	if werr != nil {
		return fmt.Errorf("bwrap: %w: %s", werr, bwOut.(fmt.Stringer).String())
	}
	return nil
}

// bareHelper attaches the helper the way one would by hand, without box's filter: the
// same flags, ready when pasta's foreground parent exits / slirp4netns writes --ready-fd.
func bareHelper(ctx context.Context, h Helper, pid int) (func() error, error) {
	// Same race as for Attach: the helper must not enter the user namespace before bwrap's
	// child has mapped it.
	if err := waitMapped(ctx, pid); err != nil {
		return nil, err
	}
	netns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, err
	}
	defer netns.Close()
	ufd, err := ioctlUserns(netns)
	if err != nil {
		return nil, err
	}
	defer ufd.Close()
	switch h {
	case Pasta:
		pidfile := filepath.Join(os.TempDir(), fmt.Sprintf("boxinet-bench-pasta-%d", pid))
		var argv []string
		for _, a := range HelperArgv(Pasta) {
			if a != "--foreground" && a != "--stderr" {
				argv = append(argv, a)
			}
		}
		cmd := exec.CommandContext(ctx, "pasta", append(argv, "--pid", pidfile)...)
		cmd.ExtraFiles = []*os.File{ufd, netns}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("pasta: %v: %s", err, out)
		}
		b, err := os.ReadFile(pidfile)
		os.Remove(pidfile)
		if err != nil {
			return nil, err
		}
		p, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return func() error { return killPid(p) }, nil
	case Slirp4netns:
		exitR, exitW, _ := os.Pipe()
		readyR, readyW, _ := os.Pipe()
		cmd := exec.CommandContext(ctx, "slirp4netns", HelperArgv(Slirp4netns)...)
		cmd.ExtraFiles = []*os.File{ufd, netns, exitR, readyW}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		exitR.Close()
		readyW.Close()
		buf := make([]byte, 1)
		_, err := readyR.Read(buf)
		readyR.Close()
		if err != nil {
			exitW.Close()
			cmd.Wait()
			return nil, fmt.Errorf("slirp4netns ready fd: %w", err)
		}
		return func() error { exitW.Close(); cmd.Process.Kill(); return cmd.Wait() }, nil
	}
	return nil, fmt.Errorf("unknown helper %q", h)
}

func killPid(p int) error {
	if p <= 0 {
		return nil
	}
	proc, err := os.FindProcess(p)
	if err != nil {
		return err
	}
	return proc.Kill()
}
