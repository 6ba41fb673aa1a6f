package lab_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

func requireLab(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, tool := range lab.Tools {
		testenv.RequireTool(t, tool)
	}
}

func url(a netip.Addr, port int) string {
	return "http://" + netip.AddrPortFrom(a, uint16(port)).String() + "/"
}

// From the host namespace (as root, no sandbox) every service answers: the lab is what
// the isolation tests assume it is, so an "unreachable" in a sandbox means blocked.
func TestReachabilityFromHost(t *testing.T) {
	requireLab(t)
	l := lab.New(t)
	ctx := context.Background()
	for _, c := range []struct{ url, body string }{
		{url(lab.Internet, lab.HTTPPort), lab.InternetBody},
		{"http://" + lab.InternetName + "/", lab.InternetBody},
		{url(lab.LANHost, lab.HTTPPort), lab.LANBody},
		{url(lab.Metadata, lab.HTTPPort), lab.MetadataBody},
		{url(lab.HostPublic, lab.HostPort), lab.HostBody},
		{url(lab.HostPrivate, lab.HostPort), lab.HostBody},
		{url(netip.MustParseAddr("127.0.0.1"), lab.HostPort), lab.HostBody},
	} {
		u := c.url
		if strings.Contains(u, lab.InternetName) {
			addrs, err := l.Resolve(ctx, lab.RoleHost, lab.InternetName)
			if err != nil || len(addrs) != 1 || addrs[0] != lab.Internet {
				t.Fatalf("resolve %s from host: %v %v", lab.InternetName, addrs, err)
			}
			u = url(addrs[0], lab.HTTPPort)
		}
		got, err := l.Get(ctx, lab.RoleHost, u)
		if err != nil || got != c.body {
			t.Errorf("GET %s from host = %q, %v; want %q", c.url, got, err, c.body)
		}
	}
	// The abstract socket exists in the host namespace only.
	var msg string
	err := lab.InNetns(l.HostNS(), func() error {
		c, err := net.Dial("unix", "@"+lab.HostAbstract)
		if err != nil {
			return err
		}
		defer c.Close()
		b := make([]byte, 100)
		n, _ := c.Read(b)
		msg = string(b[:n])
		return nil
	})
	if err != nil || msg != lab.HostAbstractMsg {
		t.Errorf("host abstract socket = %q, %v", msg, err)
	}
	if c, err := net.Dial("unix", "@"+lab.HostAbstract); err == nil {
		c.Close()
		t.Errorf("@%s is reachable from the machine's own namespace", lab.HostAbstract)
	}
	// The LAN cannot reach the internet's DNS by accident through the host: sanity of
	// the router (LAN host resolves via the router's masquerade).
	if got, err := l.Get(ctx, lab.RoleLANHost, url(lab.Internet, lab.HTTPPort)); err != nil || got != lab.InternetBody {
		t.Errorf("internet from lanhost = %q, %v", got, err)
	}
}

// An unprivileged user in the host namespace sees the lab's resolv.conf and a usable tun,
// holds no capability, and reaches the internet by name with the system's own tools.
func TestUserCommand(t *testing.T) {
	requireLab(t)
	curl := testenv.RequireTool(t, "curl")
	uid, gid := testenv.User(t)
	l := lab.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	script := `id -u; id -g; grep ^CapEff /proc/self/status; cat /etc/resolv.conf; ` +
		`test -r /dev/net/tun -a -w /dev/net/tun && echo tun-ok; ` +
		`readlink /proc/self/ns/net; ` + curl + ` -s --max-time 5 http://` + lab.InternetName + `/`
	out, err := l.UserCommand(ctx, uid, gid, "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("user command: %v\n%s", err, out)
	}
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var labNS string
	lab.InNetns(l.HostNS(), func() error { labNS, err = os.Readlink("/proc/thread-self/ns/net"); return err })
	want := []string{
		fmt.Sprint(uid), fmt.Sprint(gid), "CapEff:\t0000000000000000",
		"nameserver " + lab.Internet.String(), "tun-ok", labNS, strings.TrimSuffix(lab.InternetBody, "\n"),
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("user command output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if labNS == hostNS {
		t.Errorf("lab host namespace is the machine's namespace")
	}
	// The machine's resolv.conf and tun are untouched (the binds were private).
	if b, _ := os.ReadFile("/etc/resolv.conf"); strings.Contains(string(b), lab.Internet.String()) {
		t.Errorf("machine /etc/resolv.conf changed: %s", b)
	}
}

// Close removes every namespace, process and file of the lab, also when called twice,
// and a second lab started meanwhile is independent.
func TestTeardown(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	l, err := lab.Start(ctx)
	if err != nil {
		if l != nil {
			l.Close()
		}
		t.Fatal(err)
	}
	other := lab.New(t)
	// A stray process in a lab namespace (as a test's pasta would be) is killed too.
	stray := l.Command(ctx, lab.RoleHost, "sleep", "600")
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, role := range []string{lab.RoleHost, lab.RoleRouter, lab.RoleInet, lab.RoleLANHost} {
		names = append(names, l.NSName(role))
	}
	for _, n := range names {
		if !slices.Contains(lab.List(), n) {
			t.Fatalf("namespace %s missing while the lab runs: %v", n, lab.List())
		}
	}
	start := time.Now()
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("teardown took %v", time.Since(start))
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	stray.Wait()
	if stray.ProcessState == nil || stray.ProcessState.Success() {
		t.Errorf("stray process in the lab survived teardown: %v", stray.ProcessState)
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.Contains(string(out), n) {
			t.Errorf("namespace %s left after teardown:\n%s", n, out)
		}
	}
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Errorf("lab dir %s left after teardown: %v", l.Dir, err)
	}
	if got, err := other.Get(ctx, lab.RoleHost, url(lab.Internet, lab.HTTPPort)); err != nil || got != lab.InternetBody {
		t.Errorf("other lab broken by teardown: %q, %v", got, err)
	}
}
