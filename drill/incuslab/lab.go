// Package incuslab runs a real incusd for tests, in its own network namespace and a
// private mount namespace, so nothing it does touches the host's network: its bridge,
// dnsmasq, nftables rules and containers all live in a namespace the test made.
//
// Start(t) gives a ready daemon with a dir storage pool on tmpfs, a test-only bridge and
// placement profile, and a Debian bookworm container image built with debootstrap and
// cached by recipe hash. The network and profile are minimal stand-ins: the real
// isolation stack (ACL, nftables, port isolation) belongs to host/ and is not here.
//
// Requirements: root, incusd (scripts/incus-install.sh), debootstrap, ip, unshare,
// nsenter. Without them Start skips the test, and fails it under CI=true.
package incuslab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/testenv"
)

// Incusd is the daemon binary of the Debian package.
const Incusd = "/usr/libexec/incus/incusd"

// Names of what the lab creates inside its incusd. They are test-only stand-ins.
const (
	ImageAlias = "box-test/bookworm"
	Pool       = "default"
	Network    = "boxlab0"
	Profile    = "box-test-placement"
	// Subnet is the lab bridge's gateway CIDR. It lives in the lab's own network
	// namespace, so it cannot clash with the host or another lab.
	Subnet = "10.211.7.1/24"
)

// Options tune a lab.
type Options struct {
	// Bare leaves out the network, profile and image: a daemon with a storage pool
	// only, for tests that install their own stack.
	Bare bool
	// Empty leaves out everything, the storage pool too: a fresh daemon, as a cluster
	// join wants it (JoinCluster).
	Empty bool
	// PoolSize is the tmpfs size of the storage pool (default 6g). Each container of the
	// dir driver costs a full copy of the image (about 200 MB).
	PoolSize string
	// NetNS, when set, is the path of an existing network namespace (for example
	// drill/lab's host namespace, so the boxes' bridge NATs out through the lab's router
	// to its fake internet) where incusd runs instead of a namespace of its own. The lab
	// neither creates nor deletes it, and leaves the processes in it to its owner.
	NetNS string
	// Logf receives progress lines (image build, timings); nil is silent.
	Logf func(string, ...any)
}

// Lab is a running incusd in its own namespaces.
type Lab struct {
	Name     string // incuslab-<pid>-<n>: the netns name and the lab directory's
	Dir      string // the lab directory (INCUS_DIR is Dir/incus)
	IncusDir string
	Socket   string
	NetNS    string // path of the network namespace, /run/netns/Name
	Client   *incus.Client
	// HTTPSAddress is where the daemon listens on HTTPS ("" when it does not).
	HTTPSAddress string
	// Fingerprint of the imported image ("" for a Bare lab).
	Fingerprint string
	// Timings of setup, for reports.
	Timings map[string]time.Duration

	cmd    *exec.Cmd
	exited chan struct{}
	ids    *idWindow // idwindow.go
	// ownNS: the lab created NetNS and deletes it.
	ownNS  bool
	closed atomic.Bool
}

var seq atomic.Int64

// prefix names the labs' network namespaces and directories: incuslab-<pid>-<n>. The
// sweep matches the whole name, so it never touches another lab's namespaces.
const prefix = "incuslab-"

var staleName = regexp.MustCompile(`^incuslab-([0-9]+)-[0-9]+$`)

// Start starts a lab for t with the network, profile and image, and stops it when t ends.
func Start(t testing.TB) *Lab { return StartWith(t, Options{}) }

// StartWith starts a lab for t with options, and stops it when t ends.
func StartWith(t testing.TB, o Options) *Lab {
	t.Helper()
	Require(t)
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := Launch(ctx, o)
	if err != nil {
		t.Fatalf("incus lab: %v", err)
	}
	t.Cleanup(func() {
		start := time.Now()
		if err := l.Close(); err != nil {
			t.Errorf("incus lab teardown: %v", err)
		}
		o.Logf("incuslab: %s torn down in %s", l.Name, time.Since(start).Round(time.Millisecond))
	})
	return l
}

// Require skips t (fails it under CI=true) unless the lab can run here.
func Require(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	if _, err := os.Stat(Incusd); err != nil {
		testenv.Skip(t, "requires incusd ("+Incusd+"): run scripts/incus-install.sh")
	}
	for _, tool := range []string{"incus", "ip", "unshare", "nsenter", "debootstrap", "tar"} {
		testenv.RequireTool(t, tool)
	}
}

// Launch starts a lab outside of a test (benchmarks, scripts). Close stops it.
func Launch(ctx context.Context, o Options) (_ *Lab, err error) {
	if o.PoolSize == "" {
		o.PoolSize = "6g"
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sweep()
	name := fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), seq.Add(1))
	l := &Lab{
		Name:    name,
		Dir:     labDir(name),
		NetNS:   "/run/netns/" + name,
		Timings: map[string]time.Duration{},
		exited:  make(chan struct{}),
		ownNS:   o.NetNS == "",
	}
	if o.NetNS != "" {
		l.NetNS = o.NetNS
	}
	l.IncusDir = filepath.Join(l.Dir, "incus")
	l.Socket = filepath.Join(l.IncusDir, "unix.socket")
	l.Client = incus.New(l.Socket)
	defer func() {
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("teardown: %w", cerr))
			}
		}
	}()

	// Build or find the image first: it is the long pole and needs no daemon.
	var img Image
	if !o.Bare && !o.Empty {
		start := time.Now()
		img, err = EnsureImage(ctx, BookwormRecipe(), logf)
		if err != nil {
			return l, err
		}
		l.Timings["image"] = time.Since(start)
	}

	start := time.Now()
	_ = os.RemoveAll(l.Dir)
	if err := os.MkdirAll(l.IncusDir, 0o711); err != nil {
		return l, err
	}
	if l.ownNS {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			return l, fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
		}
		if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
			return l, fmt.Errorf("netns %s: lo up: %v: %s", name, err, out)
		}
	}
	if err := l.startDaemon(ctx, o.PoolSize); err != nil {
		return l, err
	}
	l.Timings["daemon"] = time.Since(start)

	start = time.Now()
	if o.Empty {
		return l, nil
	}
	if err := l.setup(ctx, o.Bare); err != nil {
		return l, err
	}

	l.Timings["setup"] = time.Since(start)
	if !o.Bare {
		start = time.Now()
		l.Fingerprint, err = l.Client.ImportImage(ctx, img.Metadata, img.Rootfs, ImageAlias)
		if err != nil {
			return l, err
		}
		l.Timings["import"] = time.Since(start)
	}
	logf("incuslab: %s ready (daemon %s, setup %s, image import %s)", name,
		l.Timings["daemon"].Round(time.Millisecond), l.Timings["setup"].Round(time.Millisecond),
		l.Timings["import"].Round(time.Millisecond))
	return l, nil
}

// daemonScript runs in a private mount namespace: it binds the lab's own window of
// root's subordinate ids over /etc/subuid and /etc/subgid (idwindow.go), keeps the host's
// cgroup tree aside,
// enters the lab's network namespace, mounts a sysfs of that namespace (a plain
// `ip netns exec` would hide /sys/fs/cgroup), puts the cgroup tree back, and execs
// incusd. The storage pool's tmpfs is mounted in the same private namespace, so it
// vanishes with the daemon.
const daemonScript = `set -e
mkdir -p "$LAB/cgroup" "$LAB/pool"
mount --bind "$LAB/subid" /etc/subuid
mount --bind "$LAB/subid" /etc/subgid
mount --rbind /sys/fs/cgroup "$LAB/cgroup"
mount -t tmpfs -o size="$POOL_SIZE",mode=0711 boxlab-pool "$LAB/pool"
exec nsenter --net="$NETNS" sh -c 'mount -t sysfs sysfs /sys && mount --rbind "$LAB/cgroup" /sys/fs/cgroup && exec "$INCUSD" --group root'
`

func (l *Lab) startDaemon(ctx context.Context, poolSize string) error {
	ids, err := takeIDWindow("/run/incuslab-idwindows", "/etc/subuid", "/etc/subgid")
	if err != nil {
		return fmt.Errorf("host id window: %w", err)
	}
	l.ids = ids
	if err := os.WriteFile(filepath.Join(l.Dir, "subid"), []byte(ids.entry()), 0o644); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(l.Dir, "incusd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", daemonScript)
	cmd.Env = append(os.Environ(), "LAB="+l.Dir, "NETNS="+l.NetNS, "POOL_SIZE="+poolSize,
		"INCUSD="+Incusd, "INCUS_DIR="+l.IncusDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C of `go test` reaches the test, whose cleanup stops
	// the daemon in order, instead of killing incusd mid-flight.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start incusd: %w", err)
	}
	l.cmd = cmd
	go func() { _ = cmd.Wait(); close(l.exited) }()

	ready := make(chan error, 1)
	go func() {
		ready <- l.incusCLI(ctx, "admin", "waitready", "--timeout", "60").Run()
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("incusd not ready: %v\n%s", err, tail(filepath.Join(l.Dir, "incusd.log"), 2000))
		}
		return nil
	case <-l.exited:
		return fmt.Errorf("incusd exited during start-up:\n%s", tail(filepath.Join(l.Dir, "incusd.log"), 2000))
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Lab) setup(ctx context.Context, bare bool) error {
	c := l.Client
	pool := map[string]any{"name": Pool, "driver": "dir", "config": map[string]string{"source": filepath.Join(l.Dir, "pool")}}
	if err := c.Query(ctx, "POST", "/storage-pools", pool, nil); err != nil {
		return fmt.Errorf("storage pool %s: %w", Pool, err)
	}
	if bare {
		return nil
	}
	network := map[string]any{"name": Network, "type": "bridge", "config": map[string]string{
		"ipv4.address": Subnet,
		"ipv4.nat":     "false", // nothing to NAT to: the lab namespace has no uplink
		"ipv6.address": "none",
	}}
	if err := c.Query(ctx, "POST", "/networks", network, nil); err != nil {
		return fmt.Errorf("network %s: %w", Network, err)
	}
	profile := map[string]any{
		"name":        Profile,
		"description": "TEST ONLY placement profile of the incus lab (NIC + root disk, no isolation stack)",
		"devices": map[string]map[string]string{
			"eth0": {"type": "nic", "network": Network, "name": "eth0"},
			"root": {"type": "disk", "path": "/", "pool": Pool},
		},
	}
	if err := c.Query(ctx, "POST", "/profiles", profile, nil); err != nil {
		return fmt.Errorf("profile %s: %w", Profile, err)
	}
	return nil
}

// Incus returns an incus CLI command aimed at the lab's daemon (for comparisons and
// debugging).
func (l *Lab) Incus(args ...string) *exec.Cmd {
	return l.incusCLI(context.Background(), args...)
}

func (l *Lab) incusCLI(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "incus", args...)
	cmd.Env = append(os.Environ(), "INCUS_DIR="+l.IncusDir)
	return cmd
}

// Env returns the environment variables that aim an incus client (the CLI, or box
// itself through incus.NewFromEnv) at the lab's daemon.
func (l *Lab) Env() []string {
	return []string{"INCUS_DIR=" + l.IncusDir, "INCUS_SOCKET=" + l.Socket}
}

// Close stops the daemon and its instances, kills what is left in the namespace, and
// removes the namespace and the lab directory. It is idempotent.
func (l *Lab) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if l.cmd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		// Force-stop every instance in one call, so shutdown does not wait for each
		// container's clean power-off.
		_ = l.Client.Query(ctx, "PUT", "/instances", map[string]any{
			"state": map[string]any{"action": "stop", "force": true, "timeout": -1}}, nil)
		_ = l.incusCLI(ctx, "admin", "shutdown", "--timeout", "30").Run()
		cancel()
		select {
		case <-l.exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(l.cmd.Process.Pid, syscall.SIGKILL)
			<-l.exited
		}
	}
	if _, err := os.Stat(l.NetNS); err == nil && l.ownNS {
		killNetNS(l.Name)
		if out, err := exec.Command("ip", "netns", "del", l.Name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", l.Name, err, out))
		}
	}
	if l.Client != nil {
		l.Client.Close()
	}
	l.ids.release() // its containers are gone with the daemon
	if err := os.RemoveAll(l.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// labDir is the lab's directory under the temporary directory, or under /tmp when that
// would make the socket path too long for a unix socket (108 bytes).
func labDir(name string) string {
	d := filepath.Join(os.TempDir(), name)
	if len(d)+len("/incus/unix.socket") >= 100 {
		d = filepath.Join("/tmp", name)
	}
	return d
}

// killNetNS kills, by pid, every process left in the named network namespace (dnsmasq,
// forkproxy, a stuck daemon).
func killNetNS(name string) {
	for range 3 {
		out, _ := exec.Command("ip", "netns", "pids", name).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sweep tears down labs left by test processes that died without cleanup (a timeout
// panic, a SIGKILL): their namespace is named after a pid that no longer runs.
func sweep() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		m := staleName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		stale := &Lab{Name: e.Name(), Dir: labDir(e.Name()), NetNS: "/run/netns/" + e.Name()}
		stale.IncusDir = filepath.Join(stale.Dir, "incus")
		stale.Socket = filepath.Join(stale.IncusDir, "unix.socket")
		stale.Client = incus.New(stale.Socket)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = stale.Client.Query(ctx, "PUT", "/instances", map[string]any{
			"state": map[string]any{"action": "stop", "force": true, "timeout": -1}}, nil)
		_ = stale.incusCLI(ctx, "admin", "shutdown", "--timeout", "20").Run()
		cancel()
		stale.closed.Store(true)
		killNetNS(stale.Name)
		_ = exec.Command("ip", "netns", "del", stale.Name).Run()
		_ = os.RemoveAll(stale.Dir)
	}
}
