package inet

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// scratchNetns makes a throwaway network namespace (as root) for the duration of t.
func scratchNetns(t *testing.T) (name string, f *os.File) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "ip")
	name = "boxinet-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	exec.Command("ip", "netns", "del", name).Run() // a previous run's leftover, if any
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return name, f
}

// The ruleset goes into a real kernel through google/nftables, and `nft list` reads back
// exactly the golden text: one file proves both the rendering and the kernel's reading.
// Applying twice is idempotent.
func TestApplyKernelGolden(t *testing.T) {
	name, f := scratchNetns(t)
	nft := testenv.RequireTool(t, "nft")
	for _, h := range []Helper{Pasta, Slirp4netns} {
		rs := Plan(Options{Helper: h, HostAddrs: laptop, HostNets: laptopNets})
		for i := 0; i < 2; i++ {
			c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
			if err != nil {
				t.Fatal(err)
			}
			if err := Apply(c, rs); err != nil {
				t.Fatalf("%s apply %d: %v", h, i, err)
			}
			if err := Verify(c, rs); err != nil {
				t.Fatalf("%s verify %d: %v", h, i, err)
			}
		}
		out, err := exec.Command("ip", "netns", "exec", name, nft, "list", "ruleset").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		golden(t, "plan-"+string(h)+".nft", string(out))
	}
}

// The filter accepts loopback by its interface index (1, the kernel's LOOPBACK_IFINDEX:
// lo is registered first in every namespace and cannot be removed), never by name: a
// name is the namespace owner's to change. As that owner (root in the sandbox's outer
// user namespace, or anything lent its CAP_NET_ADMIN, as box's netlink sends were in
// session 11), rename lo away and the uplink to "lo", and a filter matching `oifname
// "lo"` accepts all the uplink's traffic: the LAN, the host, metadata. Here, in
// throwaway namespaces: the uplink to a private-range peer is renamed "lo" after the
// filter is in, and the peer must stay rejected; the real loopback, renamed, must still
// be accepted. The unsafe build's loopback by name (BOX_UNSAFE_OFF=loopback-index) is
// shown to fail both.
func TestLoopbackByIndexHoldsAgainstRename(t *testing.T) {
	if lan, local := renameUplinkToLo(t, Options{Helper: Pasta}); lan == nil {
		t.Errorf("the LAN peer reached through the uplink renamed \"lo\": the filter takes loopback by name")
	} else if local != nil {
		t.Errorf("the real loopback, renamed, refused: %v", local)
	}
	t.Run("by-name", func(t *testing.T) {
		if lan, local := renameUplinkToLo(t, Options{Helper: Pasta, UnsafeLoopbackName: true}); lan != nil || local == nil {
			t.Errorf("loopback by name: LAN peer %v, real loopback renamed %v; want reached, refused", lan, local)
		}
	})
}

// renameUplinkToLo installs opts' filter in a throwaway namespace whose uplink reaches a
// peer at 10.99.0.1, renames lo away and the uplink to "lo", and dials the peer and the
// namespace's own 127.0.0.1: their errors (nil: reached).
func renameUplinkToLo(t *testing.T, opts Options) (lanErr, localErr error) {
	u := newUplink(t, opts)
	lan, local := u.listen(u.peer, "10.99.0.1:0"), u.listen(u.sb, "127.0.0.1:0")
	if err := u.dial(lan); err == nil {
		t.Fatalf("%s reached before any rename: the filter does not reject a private range", lan)
	}
	if err := u.dial(local); err != nil {
		t.Fatalf("loopback %s before any rename: %v", local, err)
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "down"}, {"link", "set", "lo", "name", "realloop"},
		{"link", "set", "boxup0", "down"}, {"link", "set", "boxup0", "name", "lo"},
		{"link", "set", "lo", "up"}, {"link", "set", "realloop", "up"},
	} {
		u.ip(append([]string{"-n", u.sb}, args...)...)
	}
	return u.dial(lan), u.dial(local)
}

// uplink is a throwaway sandbox namespace (sb) with opts' filter installed and a veth
// uplink, boxup0 (10.99.0.2/24), to a peer namespace (10.99.0.1/24).
type uplink struct {
	t        *testing.T
	sb, peer string
}

func newUplink(t *testing.T, opts Options) *uplink {
	sb, sbf := scratchNetns(t)
	u := &uplink{t: t, sb: sb, peer: sb + "-peer"}
	exec.Command("ip", "netns", "del", u.peer).Run()
	u.ip("netns", "add", u.peer)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", u.peer).Run() })
	u.ip("link", "add", "boxup0", "netns", sb, "type", "veth", "peer", "name", "boxpeer0", "netns", u.peer)
	u.ip("-n", u.peer, "addr", "add", "10.99.0.1/24", "dev", "boxpeer0")
	u.ip("-n", u.peer, "link", "set", "boxpeer0", "up")
	u.ip("-n", sb, "addr", "add", "10.99.0.2/24", "dev", "boxup0")
	u.ip("-n", sb, "link", "set", "boxup0", "up")
	u.ip("-n", sb, "link", "set", "lo", "up")
	c, err := nftables.New(nftables.WithNetNSFd(int(sbf.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(c, Plan(opts)); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u *uplink) ip(args ...string) {
	u.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		u.t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// listen serves TCP at addr in namespace ns (connections closed at once) until the test
// ends, and returns the address it listens on.
func (u *uplink) listen(ns, addr string) string {
	var ln net.Listener
	if err := lab.InNetns("/run/netns/"+ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { ln.Close() })
	testenv.AcceptAndClose(ln)
	return ln.Addr().String()
}

// dial connects from the sandbox namespace: nil = reached.
func (u *uplink) dial(addr string) error {
	return lab.InNetns("/run/netns/"+u.sb, func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second) // a bound only: a reject fails at once
		if err == nil {
			c.Close()
		}
		return err
	})
}

// Every IANA special-purpose IPv4 range that is not globally reachable and that a host
// can route (as a VPN, a fake-IP proxy in 198.18.0.0/15, a DS-Lite or NAT64 box in
// 192.0.0.0/24 do), and the reserved 240/4, is rejected: the peer holds an address in
// each, routed through the uplink. The table is the registry's, not the catalogue
// (policy.Unreachable): 192.0.0.0/24 and 198.18.0.0/15 were missing from it before
// session 12, and both were reached.
func TestSpecialRangesRejected(t *testing.T) {
	u := newUplink(t, Options{Helper: Pasta})
	for _, c := range []struct{ route, addr string }{
		{"", "10.99.0.1"}, // 10/8: the uplink's own subnet
		{"100.64.0.0/10", "100.64.0.10"},
		{"169.254.0.0/16", "169.254.0.10"},
		{"172.16.0.0/12", "172.31.0.10"},
		{"192.0.0.0/24", "192.0.0.8"},
		{"192.168.0.0/16", "192.168.0.10"},
		{"198.18.0.0/15", "198.19.0.10"},
		{"240.0.0.0/4", "240.0.0.10"},
	} {
		t.Run(c.addr, func(t *testing.T) {
			if c.route != "" {
				u.ip("-n", u.peer, "addr", "add", c.addr+"/32", "dev", "boxpeer0")
				u.ip("-n", u.sb, "route", "add", c.route, "dev", "boxup0")
			}
			if at := u.listen(u.peer, net.JoinHostPort(c.addr, "0")); u.dial(at) == nil {
				t.Errorf("%s reached through the uplink", at)
			}
		})
	}
}
