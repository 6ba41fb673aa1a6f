// Package lab builds the hermetic network lab the drill and the isolation tests run in.
//
// Everything lives in network namespaces the lab creates (named boxlab-OWNERPID-N-ROLE);
// none of them has a link to the machine's own network, so no packet of a test can leave
// them. Topology:
//
//	inet (203.0.113.10: HTTP, HTTPS (the lab's CA), UDP echo, DNS for *.test: see web.go)
//	  |  wan0 203.0.113.1/24, masquerade
//	router (br0 192.168.77.1/24, metadata 169.254.169.254: HTTP, 169.254.1.1: HTTP on
//	        port 53)
//	  |  br0                                  |  br0
//	host (eth0 192.168.77.2/24 + 198.51.100.2/24,   lanhost (192.168.77.10 and, a LAN
//	                                                  in public space, 198.51.100.10:
//	                                                  HTTP secret)
//	      :8080 host secret on all addresses,
//	      @boxlab-host-secret abstract socket)
//
// Box runs as an unprivileged user in "host" (UserCommand). A later tenant such as an
// incusd joins by AddNS + Command/UserCommand; teardown covers every namespace added.
// The lab must run as root.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Roles of the namespaces every lab has.
const (
	RoleHost    = "host"
	RoleRouter  = "router"
	RoleInet    = "inet"
	RoleLANHost = "lanhost"
)

// Fixed addresses and names of the lab (documentation and private ranges only).
var (
	HostPrivate = netip.MustParseAddr("192.168.77.2")
	HostPublic  = netip.MustParseAddr("198.51.100.2")
	RouterLAN   = netip.MustParseAddr("192.168.77.1")
	RouterWAN   = netip.MustParseAddr("203.0.113.1")
	Internet    = netip.MustParseAddr("203.0.113.10")
	LANHost     = netip.MustParseAddr("192.168.77.10")
	// LANHostPublic is the LAN host on the host's public subnet (198.51.100.0/24): a
	// neighbour in no private range, as on a campus or a hosting provider's shared subnet.
	LANHostPublic = netip.MustParseAddr("198.51.100.10")
	Metadata      = netip.MustParseAddr("169.254.169.254")
	// Special are the LAN host's addresses in special-purpose ranges that a host may
	// route (a fake-IP proxy's 198.18.0.0/15, a DS-Lite or NAT64 box's 192.0.0.0/24):
	// the router routes them to it. The drill's net:special-ranges row probes them.
	Special = []netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("192.0.0.8")}
	// LinkLocalDNS is pasta's DNS address (inet.PastaResolver), also a link-local host
	// the router answers TCP on (port 53): what a helper that does not map TCP reaches.
	LinkLocalDNS = netip.MustParseAddr("169.254.1.1")
	// SearchHost is another host of the fake internet, named only under the search
	// domain SearchDomain (SearchName.SearchDomain): what a resolver that applies the
	// search list to an allowed name reaches.
	SearchHost   = netip.MustParseAddr("203.0.113.66")
	InternetName = "example.test"
)

// Ports and bodies of the lab's services. Secret bodies must never be read from a box.
const (
	HTTPPort        = 80
	HostPort        = 8080
	HostAbstract    = "boxlab-host-secret" // abstract unix socket in the host namespace (@ omitted)
	InternetBody    = "boxlab: internet ok\n"
	LANBody         = "boxlab: LAN SECRET\n"
	HostBody        = "boxlab: HOST SECRET\n"
	MetadataBody    = "boxlab: METADATA SECRET\n"
	HostAbstractMsg = "boxlab: HOST ABSTRACT SECRET\n"
	SearchBody      = "boxlab: SEARCH DOMAIN SECRET\n"
)

const prefix = "boxlab-"

// Lab is one running lab. Its fields are read-only after Start.
type Lab struct {
	// ID is the unique part of the namespace names (OWNERPID-N).
	ID string
	// Dir holds the lab's files: resolv.conf and a 0666 tun node for UserCommand.
	Dir string
	// ResolvConf is the resolv.conf UserCommand binds at /etc/resolv.conf
	// (nameserver 203.0.113.10), because pasta and slirp4netns pick their upstream
	// resolver from it.
	ResolvConf string
	// Tun is a 0666 /dev/net/tun node UserCommand binds over /dev/net/tun: the machine's
	// own node may be 0600, which an unprivileged pasta or slirp4netns cannot open.
	Tun string
	// CAFile is the PEM of the CA that signed the fake internet's HTTPS certificate
	// (world-readable); WWW is the directory served under the internet's other paths.
	CAFile, WWW string
	// EtcUpper, when set, is a directory UserCommand lays over /etc (an overlay, with
	// EtcWork its work directory): a test's own /etc/gitconfig, the machine's untouched.
	EtcUpper, EtcWork string
	// ResolvedStub, with an EtcUpper whose resolv.conf links to it: the path
	// (/run/systemd/resolve/stub-resolv.conf) UserCommand makes in a tmpfs over /run, so
	// /etc/resolv.conf is a link into /run as systemd-resolved makes it (Ubuntu, Fedora).
	ResolvedStub string

	mu        sync.Mutex
	nss       []string // namespace names, in creation order
	closers   []func() error
	procs     []*exec.Cmd
	dnsLog    *lockedBuffer
	closeOnce sync.Once
	closeErr  error
}

var seq atomic.Int64

// New starts a lab for a test and tears it down when the test ends, failed or not.
// It skips (fails under CI=true) when not root or a tool is missing: callers gate with
// internal/testenv first if they want their own message.
func New(t testing.TB) *Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Start(ctx)
	if l != nil {
		t.Cleanup(func() {
			if err := l.Close(); err != nil {
				t.Errorf("lab teardown: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	return l
}

// Tools the lab runs (as root, in its own namespaces).
var Tools = []string{"ip", "nft", "nsenter", "unshare", "setpriv", "dnsmasq", "mount"}

// Start builds a lab. On error the partial lab is returned too, so its Close can be
// deferred uniformly; Close is idempotent.
func Start(ctx context.Context) (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the lab needs root")
	}
	for _, tool := range Tools {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("lab tool %s: %w", tool, err)
		}
	}
	SweepStale()
	l := &Lab{ID: fmt.Sprintf("%d-%d", os.Getpid(), seq.Add(1))}
	dir, err := os.MkdirTemp("", prefix+l.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("lab dir: %w", err)
	}
	l.Dir = dir
	l.closers = append(l.closers, func() error { return os.RemoveAll(dir) })
	if err := l.build(ctx); err != nil {
		return l, err
	}
	return l, nil
}

// NSName is the netns name of a role in this lab.
func (l *Lab) NSName(role string) string { return prefix + l.ID + "-" + role }

// NSPath is the bind-mounted netns file of a role, for nsenter --net= or setns.
func (l *Lab) NSPath(role string) string { return "/run/netns/" + l.NSName(role) }

// HostNS is the netns path where box runs.
func (l *Lab) HostNS() string { return l.NSPath(RoleHost) }

// AddNS creates a namespace with lo up and registers it for teardown.
func (l *Lab) AddNS(ctx context.Context, role string) (string, error) {
	name := l.NSName(role)
	if err := run(ctx, "ip", "netns", "add", name); err != nil {
		return "", err
	}
	l.mu.Lock()
	l.nss = append(l.nss, name)
	l.mu.Unlock()
	if err := run(ctx, "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		return "", err
	}
	return l.NSPath(role), nil
}

func (l *Lab) build(ctx context.Context) error {
	for _, role := range []string{RoleRouter, RoleHost, RoleInet, RoleLANHost} {
		if _, err := l.AddNS(ctx, role); err != nil {
			return err
		}
	}
	r, h, in, lan := l.NSName(RoleRouter), l.NSName(RoleHost), l.NSName(RoleInet), l.NSName(RoleLANHost)
	// Every link is created inside the router namespace and its peer moved into a lab
	// namespace: nothing is ever created in, or linked to, the machine's namespace.
	steps := [][]string{
		{"ip", "-n", r, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", r, "addr", "add", RouterLAN.String() + "/24", "dev", "br0"},
		{"ip", "-n", r, "link", "set", "br0", "up"},
		{"ip", "-n", r, "addr", "add", Metadata.String() + "/32", "dev", "lo"},
		{"ip", "-n", r, "addr", "add", LinkLocalDNS.String() + "/32", "dev", "lo"},

		{"ip", "-n", r, "link", "add", "host0", "type", "veth", "peer", "name", "eth0", "netns", h},
		{"ip", "-n", r, "link", "set", "host0", "master", "br0", "up"},
		{"ip", "-n", h, "addr", "add", HostPrivate.String() + "/24", "dev", "eth0"},
		{"ip", "-n", h, "addr", "add", HostPublic.String() + "/24", "dev", "eth0"},
		{"ip", "-n", h, "link", "set", "eth0", "up"},
		{"ip", "-n", h, "route", "add", "default", "via", RouterLAN.String()},

		{"ip", "-n", r, "link", "add", "lan0", "type", "veth", "peer", "name", "eth0", "netns", lan},
		{"ip", "-n", r, "link", "set", "lan0", "master", "br0", "up"},
		{"ip", "-n", lan, "addr", "add", LANHost.String() + "/24", "dev", "eth0"},
		{"ip", "-n", lan, "addr", "add", LANHostPublic.String() + "/24", "dev", "eth0"},
		{"ip", "-n", lan, "link", "set", "eth0", "up"},
		{"ip", "-n", lan, "route", "add", "default", "via", RouterLAN.String()},
		{"ip", "-n", lan, "addr", "add", Special[0].String() + "/32", "dev", "eth0"},
		{"ip", "-n", lan, "addr", "add", Special[1].String() + "/32", "dev", "eth0"},
		{"ip", "-n", r, "route", "add", Special[0].String() + "/32", "via", LANHost.String()},
		{"ip", "-n", r, "route", "add", Special[1].String() + "/32", "via", LANHost.String()},

		{"ip", "-n", r, "link", "add", "wan0", "type", "veth", "peer", "name", "eth0", "netns", in},
		{"ip", "-n", r, "addr", "add", RouterWAN.String() + "/24", "dev", "wan0"},
		{"ip", "-n", r, "link", "set", "wan0", "up"},
		{"ip", "-n", in, "addr", "add", Internet.String() + "/24", "dev", "eth0"},
		{"ip", "-n", in, "addr", "add", SearchHost.String() + "/24", "dev", "eth0"},
		{"ip", "-n", in, "link", "set", "eth0", "up"},

		{"ip", "netns", "exec", r, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1:]...); err != nil {
			return err
		}
	}
	// Masquerade toward the internet: the inet host has no route back to the LAN.
	nat := "table ip boxlab {\n chain post {\n  type nat hook postrouting priority srcnat;\n  oifname \"wan0\" masquerade\n }\n}\n"
	if err := runIn(ctx, nat, "ip", "netns", "exec", r, "nft", "-f", "-"); err != nil {
		return err
	}

	if err := os.Chmod(l.Dir, 0o755); err != nil {
		return fmt.Errorf("lab dir: %w", err)
	}
	l.ResolvConf = filepath.Join(l.Dir, "resolv.conf")
	if err := os.WriteFile(l.ResolvConf, []byte("nameserver "+Internet.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("lab resolv.conf: %w", err)
	}
	l.Tun = filepath.Join(l.Dir, "tun")
	if err := unix.Mknod(l.Tun, unix.S_IFCHR|0o666, int(unix.Mkdev(10, 200))); err != nil {
		return fmt.Errorf("lab tun node %s: %w", l.Tun, err)
	}
	if err := os.Chmod(l.Tun, 0o666); err != nil { // mknod honours the umask
		return fmt.Errorf("lab tun node %s: %w", l.Tun, err)
	}

	if err := l.services(ctx); err != nil {
		return err
	}
	return l.waitReady(ctx)
}

func (l *Lab) services(ctx context.Context) error {
	serve := []struct {
		role, addr, body string
	}{
		{RoleLANHost, netip.AddrPortFrom(LANHost, HTTPPort).String(), LANBody},
		{RoleLANHost, netip.AddrPortFrom(LANHostPublic, HTTPPort).String(), LANBody},
		{RoleLANHost, netip.AddrPortFrom(Special[0], HTTPPort).String(), LANBody},
		{RoleLANHost, netip.AddrPortFrom(Special[1], HTTPPort).String(), LANBody},
		{RoleInet, netip.AddrPortFrom(SearchHost, HTTPPort).String(), SearchBody},
		{RoleRouter, netip.AddrPortFrom(Metadata, HTTPPort).String(), MetadataBody},
		{RoleRouter, netip.AddrPortFrom(LinkLocalDNS, 53).String(), MetadataBody},
		{RoleHost, ":" + strconv.Itoa(HostPort), HostBody}, // every address, v4 and v6
	}
	for _, s := range serve {
		if err := l.ServeHTTP(s.role, s.addr, s.body); err != nil {
			return err
		}
	}
	if err := l.serveInternet(); err != nil {
		return err
	}
	ul, err := Listen(l.NSPath(RoleHost), "unix", "@"+HostAbstract)
	if err != nil {
		return err
	}
	l.addCloser(ul.Close)
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(HostAbstractMsg))
			c.Close()
		}
	}()

	// dnsmasq with --local=/#/: without it AAAA queries are refused and resolvers stall.
	dns := exec.Command("nsenter", append([]string{"--net=" + l.NSPath(RoleInet), "--",
		"dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--pid-file=",
		"--user=nobody", "--group=nogroup",
		"--no-resolv", "--no-hosts", "--listen-address=" + Internet.String(), "--bind-interfaces",
		"--local=/#/"}, hostRecords()...)...)
	dns.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	l.dnsLog = &lockedBuffer{}
	dns.Stdout, dns.Stderr = l.dnsLog, l.dnsLog
	if err := l.StartProc(dns); err != nil {
		return fmt.Errorf("dnsmasq: %w", err)
	}
	return nil
}

// ServeHTTP serves body at every path on addr inside the role's namespace until Close.
func (l *Lab) ServeHTTP(role, addr, body string) error {
	ln, err := Listen(l.NSPath(role), "tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte(body))
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go srv.Serve(ln)
	l.addCloser(srv.Close)
	return nil
}

// StartProc starts cmd and registers it to be killed, by pid, at Close.
func (l *Lab) StartProc(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	l.mu.Lock()
	l.procs = append(l.procs, cmd)
	l.mu.Unlock()
	return nil
}

func (l *Lab) addCloser(f func() error) {
	l.mu.Lock()
	l.closers = append(l.closers, f)
	l.mu.Unlock()
}

// waitReady returns once DNS and the internet service answer from the host namespace.
func (l *Lab) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var last error
	for {
		addrs, err := l.Resolve(ctx, RoleHost, InternetName)
		if err == nil && len(addrs) == 1 && addrs[0] == Internet {
			return nil
		}
		last = fmt.Errorf("resolve %s from host: %v %v", InternetName, addrs, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab not ready: %w (dnsmasq: %s)", last, l.dnsLog.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Resolve looks name up (A records) from the role's namespace via the lab's DNS.
func (l *Lab) Resolve(ctx context.Context, role, name string) ([]netip.Addr, error) {
	dial := Dialer(l.NSPath(role))
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, netip.AddrPortFrom(Internet, 53).String())
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return r.LookupNetIP(ctx, "ip4", name)
}

// Get fetches url from the role's namespace (as root, no sandbox): the lab's own probe.
func (l *Lab) Get(ctx context.Context, role, url string) (string, error) {
	c := &http.Client{
		Transport: &http.Transport{DialContext: Dialer(l.NSPath(role)), DisableKeepAlives: true},
		Timeout:   3 * time.Second,
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b), err
}

// Command runs argv as root inside the role's network namespace (mounts untouched).
func (l *Lab) Command(ctx context.Context, role string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + l.NSPath(role), "--"}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// userScript runs in a private mount namespace inside the host netns: it lays the
// test's /etc over the machine's (if any), makes the resolved stub (if any) in a tmpfs
// over /run, binds the lab's resolv.conf (through the link, if the overlay made one) and
// 0666 tun node, then drops to the user and execs the command.
const userScript = `set -e
if [ -n "$5" ]; then mount -t overlay overlay -o "lowerdir=/etc,upperdir=$5,workdir=$6" /etc; fi
if [ -n "$7" ]; then mount -t tmpfs tmpfs /run; mkdir -p "$(dirname "$7")"; : > "$7"; fi
mount --bind "$1" /etc/resolv.conf
mount --bind "$2" /dev/net/tun
uid=$3 gid=$4
shift 7
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all -- "$@"`

// UserCommand runs argv as uid:gid in the host namespace, the way box runs on an
// operator's machine: no capabilities, /etc/resolv.conf pointing at the lab's DNS and a
// usable /dev/net/tun (both bound in a private mount namespace that dies with the command).
// Env is set to a minimal PATH/HOME/LANG; callers may append to cmd.Env.
func (l *Lab) UserCommand(ctx context.Context, uid, gid int, argv ...string) *exec.Cmd {
	args := []string{"--net=" + l.HostNS(), "--",
		"unshare", "--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", userScript, "sh", l.ResolvConf, l.Tun, strconv.Itoa(uid), strconv.Itoa(gid), l.EtcUpper, l.EtcWork, l.ResolvedStub}
	cmd := exec.CommandContext(ctx, "nsenter", append(args, argv...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + l.Dir, "LANG=C.UTF-8"}
	return cmd
}

// Close stops the services, kills what runs in the lab's namespaces (by pid), deletes the
// namespaces and the lab directory. Idempotent.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		procs, closers, nss := l.procs, l.closers, l.nss
		l.mu.Unlock()
		var errs []error
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
		// Reverse order: namespaces go before the directory that was registered first.
		for i := len(closers) - 1; i >= 0; i-- {
			if err := closers[i](); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		for i := len(nss) - 1; i >= 0; i-- {
			if err := deleteNS(nss[i]); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// deleteNS kills every process still inside the namespace (a test's pasta, say: all were
// started inside the lab), then deletes it.
func deleteNS(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		out, err := exec.CommandContext(ctx, "ip", "netns", "pids", name).Output()
		if err != nil {
			break // already gone
		}
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			// Never this process, whose threads visit lab namespaces (InNetns).
			if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat("/run/netns/" + name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return run(ctx, "ip", "netns", "del", name)
}

var staleName = regexp.MustCompile(`^` + prefix + `(\d+)-\d+-`)

// SweepStale deletes lab namespaces and directories left by lab owners that died without
// tearing down (a killed test binary). Labs of live processes are left alone.
func SweepStale() {
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if ownerDead(e.Name()) {
			deleteNS(e.Name())
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range dirs {
		if ownerDead(filepath.Base(d)) {
			os.RemoveAll(d)
		}
	}
}

func ownerDead(name string) bool {
	m := staleName.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, _ := strconv.Atoi(m[1])
	return pid > 0 && unix.Kill(pid, 0) == unix.ESRCH
}

// List returns the lab namespaces currently present on the machine (any owner).
func List() []string {
	var names []string
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			names = append(names, e.Name())
		}
	}
	return names
}

func run(ctx context.Context, name string, args ...string) error {
	return runIn(ctx, "", name, args...)
}

func runIn(ctx context.Context, stdin, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
