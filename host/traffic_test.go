package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The lab: four network namespaces the test makes, nothing else.
//
//	boxA (10.88.0.2) ─ vethboxa ┐
//	                            ├ boxnet 10.88.0.1/24 ─ host ─ wan0 198.51.100.2/24 ─ wan (198.51.100.1)
//	boxB (10.88.0.3) ─ vethboxb ┘
//
// "host" stands for the machine running Incus: it owns the bridge, routes the boxes to
// "wan" (the internet, and a host address outside RFC1918), and gets the firewall.
type lab struct {
	host, boxA, boxB, wan *os.File
	// got receives what boxB's one-way UDP listener heard (host-to-box delivery).
	got chan string
	// heard receives what the host's resolver on the gateway heard, answered or not.
	heard chan string
}

const (
	gwIP      = "10.88.0.1"
	boxAIP    = "10.88.0.2"
	boxBIP    = "10.88.0.3"
	hostWANIP = "198.51.100.2" // the host's own non-private address
	wanIP     = "198.51.100.1"

	// A probe expected to pass gets long enough to pass on a loaded machine; one expected
	// to be blocked gets long enough that a working path would have answered (in these
	// namespaces it answers in milliseconds).
	waitPass  = 5 * time.Second
	waitBlock = 1500 * time.Millisecond
)

func waitFor(pass bool) time.Duration {
	if pass {
		return waitPass
	}
	return waitBlock
}

func newLab(t *testing.T) *lab { return newLabBrNF(t, false) }

// newLabBrNF makes the lab; brNetfilter says whether bridged frames also traverse the IP
// hooks (br_netfilter's bridge-nf-call-*; on by default where the code is built in, and
// on any host where Docker has loaded it).
func newLabBrNF(t *testing.T, brNetfilter bool) *lab {
	t.Helper()
	l := &lab{host: newNS(t), boxA: newNS(t), boxB: newNS(t), wan: newNS(t), got: make(chan string, 16), heard: make(chan string, 16)}
	h := func(args ...string) { nsRun(t, l.host, args...) }
	h("ip", "link", "set", "lo", "up")
	h("ip", "link", "add", "boxnet", "type", "bridge")
	h("ip", "addr", "add", gwIP+"/24", "dev", "boxnet")
	h("ip", "link", "set", "boxnet", "up")
	for _, b := range []struct {
		ns   *os.File
		port string
		ip   string
	}{{l.boxA, "vethboxa", boxAIP}, {l.boxB, "vethboxb", boxBIP}} {
		h("ip", "link", "add", b.port, "type", "veth", "peer", "name", "eth0", "netns", nsPath(b.ns))
		h("ip", "link", "set", b.port, "master", "boxnet", "up")
		nsRun(t, b.ns, "ip", "link", "set", "lo", "up")
		nsRun(t, b.ns, "ip", "addr", "add", b.ip+"/24", "dev", "eth0")
		nsRun(t, b.ns, "ip", "link", "set", "eth0", "up")
		nsRun(t, b.ns, "ip", "route", "add", "default", "via", gwIP)
	}
	h("ip", "link", "add", "wan0", "type", "veth", "peer", "name", "wan0", "netns", nsPath(l.wan))
	h("ip", "addr", "add", hostWANIP+"/24", "dev", "wan0")
	h("ip", "link", "set", "wan0", "up")
	nsRun(t, l.wan, "ip", "link", "set", "lo", "up")
	nsRun(t, l.wan, "ip", "addr", "add", wanIP+"/24", "dev", "wan0")
	nsRun(t, l.wan, "ip", "link", "set", "wan0", "up")
	nsRun(t, l.wan, "ip", "route", "add", "10.88.0.0/24", "via", hostWANIP)
	h("ip", "route", "add", "default", "via", wanIP)
	h("sysctl", "-qw", "net.ipv4.ip_forward=1")
	// The firewall must not lean on reverse-path filtering (hosts differ): off here, so a
	// spoofed source is stopped by the rules or not at all.
	for _, k := range []string{"all", "default", "boxnet"} {
		h("sysctl", "-qw", "net.ipv4.conf."+k+".rp_filter=0")
	}
	// With br_netfilter calling the IP hooks for bridged frames, inet box/forward also
	// drops box-to-box IPv4 (a second layer). Off by default here, so the bridge table
	// alone is what the box-to-box probes test: a host without br_netfilter is the
	// worst case.
	brnf := map[bool]string{true: "1", false: "0"}[brNetfilter]
	for _, k := range []string{"iptables", "ip6tables", "arptables"} {
		h("sysctl", "-qw", "net.bridge.bridge-nf-call-"+k+"="+brnf)
	}

	// Services: the host's resolver and DHCP ports and one ordinary port (on every
	// address), box B's port, the internet's port.
	l.serveTCP(t, l.host, "0.0.0.0:53")
	l.serveTCP(t, l.host, "0.0.0.0:8080")
	// The resolver binds each address (as dnsmasq does): a reply from a wildcard socket
	// would leave from the bridge address, which conntrack cannot match to the query.
	l.serveUDPEcho(t, l.host, gwIP+":53", l.heard)
	l.serveUDPEcho(t, l.host, hostWANIP+":53", nil)
	l.serveUDPEcho(t, l.host, "0.0.0.0:67", nil)
	l.serveTCP(t, l.boxB, "0.0.0.0:8080")
	l.serveTCP(t, l.wan, wanIP+":8080")
	l.serveUDPSink(t, l.boxB, "0.0.0.0:9999")
	return l
}

func (l *lab) apply(t *testing.T, rs Ruleset) {
	t.Helper()
	if err := Apply(nftConn(t, l.host), rs); err != nil {
		t.Fatal(err)
	}
}

func listenIn(t *testing.T, ns *os.File, network, addr string) (ln net.Listener, pc net.PacketConn) {
	t.Helper()
	err := inNS(ns, func() (err error) {
		if network == "tcp" {
			ln, err = net.Listen("tcp4", addr)
		} else {
			pc, err = net.ListenPacket("udp4", addr)
		}
		return err
	})
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, addr, err)
	}
	return ln, pc
}

// serveTCP answers every connection with "ok": a probe that reads it made a round trip.
func (l *lab) serveTCP(t *testing.T, ns *os.File, addr string) {
	ln, _ := listenIn(t, ns, "tcp", addr)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
}

// serveUDPEcho echoes every datagram, and reports it on heard when heard is not nil.
func (l *lab) serveUDPEcho(t *testing.T, ns *os.File, addr string, heard chan<- string) {
	_, pc := listenIn(t, ns, "udp", addr)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if heard != nil {
				select {
				case heard <- string(buf[:n]):
				default:
				}
			}
			pc.WriteTo(buf[:n], from)
		}
	}()
}

func (l *lab) serveUDPSink(t *testing.T, ns *os.File, addr string) {
	_, pc := listenIn(t, ns, "udp", addr)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			select {
			case l.got <- string(buf[:n]):
			default:
			}
		}
	}()
}

// A probe returns nil if the traffic got through (a full round trip unless it says
// otherwise) and an error saying how it failed otherwise.
type probe struct {
	name string
	run  func(*lab, time.Duration) error
	// allowed is what the contract says: true means the traffic must pass.
	allowed bool
	// ablations each name rules whose removal must flip the outcome: the probe is able
	// to fail, and the rule is what makes it pass (or fail).
	ablations [][]string
}

func tcpProbe(from func(*lab) *os.File, to string) func(*lab, time.Duration) error {
	return func(l *lab, wait time.Duration) error {
		var conn net.Conn
		err := inNS(from(l), func() (err error) {
			conn, err = (&net.Dialer{Timeout: wait}).Dial("tcp4", to)
			return err
		})
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(wait))
		b, err := io.ReadAll(conn)
		if err != nil || string(b) != "ok" {
			return fmt.Errorf("connected but read %q: %v", b, err)
		}
		return nil
	}
}

// udpProbe sends one datagram from local (":0" for any port) and waits for its echo.
func udpProbe(from func(*lab) *os.File, local, to string) func(*lab, time.Duration) error {
	return func(l *lab, wait time.Duration) error {
		var pc net.PacketConn
		err := inNS(from(l), func() (err error) {
			lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				err := c.Control(func(fd uintptr) {
					// A DHCP client broadcasts, and re-binds port 68 at will.
					serr = errors.Join(unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_BROADCAST, 1),
						unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1))
				})
				return errors.Join(err, serr)
			}}
			pc, err = lc.ListenPacket(context.Background(), "udp4", local)
			return err
		})
		if err != nil {
			return err
		}
		defer pc.Close()
		dst, err := net.ResolveUDPAddr("udp4", to)
		if err != nil {
			return err
		}
		if _, err := pc.WriteTo([]byte("probe"), dst); err != nil {
			return err
		}
		pc.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 64)
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		if string(buf[:n]) != "probe" {
			return fmt.Errorf("echo %q", buf[:n])
		}
		return nil
	}
}

// udpDelivered sends one datagram to box B's sink and checks that B heard it: it tests
// one direction alone, without depending on any reply path.
func udpDelivered(from func(*lab) *os.File, to string) func(*lab, time.Duration) error {
	return func(l *lab, wait time.Duration) error {
		msg := fmt.Sprintf("hello %d", time.Now().UnixNano())
		err := inNS(from(l), func() error {
			c, err := net.Dial("udp4", to)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte(msg))
			return err
		})
		if err != nil {
			return err
		}
		deadline := time.After(wait)
		for {
			select {
			case got := <-l.got:
				if got == msg {
					return nil
				}
			case <-deadline:
				return errors.New("not delivered")
			}
		}
	}
}

// spoofedUDP sends one datagram with a forged source address from a raw socket and
// checks whether the host's resolver on the gateway heard it. A resolver that answers
// forged queries reflects its replies at whoever the forger names.
func spoofedUDP(from func(*lab) *os.File, src, dst string, dport uint16) func(*lab, time.Duration) error {
	return func(l *lab, wait time.Duration) error {
		msg := fmt.Sprintf("spoof %d", time.Now().UnixNano())
		s4, d4 := net.ParseIP(src).To4(), net.ParseIP(dst).To4()
		udp := make([]byte, 8+len(msg))
		binary.BigEndian.PutUint16(udp[0:], 40000)
		binary.BigEndian.PutUint16(udp[2:], dport)
		binary.BigEndian.PutUint16(udp[4:], uint16(len(udp))) // checksum 0: none, fine for IPv4
		copy(udp[8:], msg)
		ip := make([]byte, 20, 20+len(udp))
		ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP // the kernel fills length, id, checksum
		copy(ip[12:], s4)
		copy(ip[16:], d4)
		pkt := append(ip, udp...)
		err := inNS(from(l), func() error {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW) // implies IP_HDRINCL
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: [4]byte(d4)})
		})
		if err != nil {
			return err
		}
		deadline := time.After(wait)
		for {
			select {
			case got := <-l.heard:
				if got == msg {
					return nil
				}
			case <-deadline:
				return errors.New("not heard")
			}
		}
	}
}

func icmpProbe(from func(*lab) *os.File, to string) func(*lab, time.Duration) error {
	return func(l *lab, wait time.Duration) error {
		var c *icmp.PacketConn
		err := inNS(from(l), func() (err error) {
			c, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0")
			return err
		})
		if err != nil {
			return err
		}
		defer c.Close()
		id := os.Getpid() & 0xffff
		req, _ := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: 1, Data: []byte("box")}}).Marshal(nil)
		dst := &net.IPAddr{IP: net.ParseIP(to)}
		if _, err := c.WriteTo(req, dst); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 512)
		for {
			n, peer, err := c.ReadFrom(buf)
			if err != nil {
				return err
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEchoReply || peer.String() != to {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id {
				return nil
			}
		}
	}
}

func boxA(l *lab) *os.File   { return l.boxA }
func hostNS(l *lab) *os.File { return l.host }
func wanNS(l *lab) *os.File  { return l.wan }

var probes = []probe{
	// Box to box, switched at L2 by the bridge: only the bridge table sees it.
	{"box A to box B, ICMP", icmpProbe(boxA, boxBIP), false, [][]string{{"box-to-box"}}},
	{"box A to box B, TCP", tcpProbe(boxA, boxBIP+":8080"), false, [][]string{{"box-to-box"}}},
	// Box to host: only DHCP and DNS to the gateway.
	{"box to host gateway, TCP 8080", tcpProbe(boxA, gwIP+":8080"), false, [][]string{{"box-to-host"}}},
	{"box to host gateway, ICMP", icmpProbe(boxA, gwIP), false, [][]string{{"box-to-host"}}},
	{"box to host public address, TCP 8080", tcpProbe(boxA, hostWANIP+":8080"), false, [][]string{{"box-to-host"}}},
	{"box to host public address, DNS UDP", udpProbe(boxA, ":0", hostWANIP+":53"), false, [][]string{{"box-to-host"}}},
	{"box to gateway, DNS UDP", udpProbe(boxA, ":0", gwIP+":53"), true, [][]string{{"dns-udp"}, {"output-replies"}}},
	// From the box subnet only: else a box could make the host's resolver send its
	// replies (from the host, past the ACL) to any address it forges, e.g. on the LAN.
	{"box to gateway, DNS UDP from a forged outside source", spoofedUDP(boxA, "192.168.77.10", gwIP, 53), false, [][]string{{"dns-udp/saddr"}}},
	{"box to gateway, DNS TCP", tcpProbe(boxA, gwIP+":53"), true, [][]string{{"dns-tcp"}, {"output-replies"}}},
	// DISCOVER is broadcast; conntrack sees the server's reply to it as new. The reply to
	// a unicast REQUEST is both a DHCP reply and a conntrack reply: either rule passes it.
	{"box DHCP broadcast", udpProbe(boxA, ":68", "255.255.255.255:67"), true, [][]string{{"dhcp-broadcast"}, {"dhcp-reply"}}},
	{"box DHCP to gateway", udpProbe(boxA, ":68", gwIP+":67"), true, [][]string{{"dhcp"}, {"dhcp-reply", "output-replies"}}},
	// Host to box: dropped on the way out; the box's reply would also be dropped on the
	// way in, so the TCP probe needs both gone and the one-way UDP probe tests output alone.
	{"host to box, TCP", tcpProbe(hostNS, boxBIP+":8080"), false, [][]string{{"host-to-box", "box-to-host"}}},
	{"host to box, ICMP", icmpProbe(hostNS, boxBIP), false, [][]string{{"host-to-box", "box-to-host"}}},
	{"host to box, UDP delivered", udpDelivered(hostNS, boxBIP+":9999"), false, [][]string{{"host-to-box"}}},
	// Routed into the bridge from elsewhere (the LAN, another bridge): dropped.
	{"routed into box, TCP", tcpProbe(wanNS, boxBIP+":8080"), false, [][]string{{"forward-to-box"}}},
	// The boxes' own connections out still get their replies.
	{"box to internet, TCP", tcpProbe(boxA, wanIP+":8080"), true, [][]string{{"forward-replies"}}},
}

func outcome(err error) string {
	if err == nil {
		return "passes"
	}
	return "blocked (" + err.Error() + ")"
}

// TestTraffic proves the contract with packets: each probe gives the contract's answer
// under the planned rules, and the opposite answer when the rule it relies on is
// removed, so no probe passes by accident.
func TestTraffic(t *testing.T) {
	requireKernel(t)
	guardRootRuleset(t)
	meta, err := DetectBridgeMeta()
	if err != nil {
		t.Fatal(err)
	}
	in := testInputs(meta)
	full, err := Plan(in)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("planned rules", func(t *testing.T) {
		l := newLab(t)
		l.apply(t, full)
		check := func(p probe) {
			err := p.run(l, waitFor(p.allowed))
			if (err == nil) != p.allowed {
				t.Errorf("%s: %s, contract says %s", p.name, outcome(err), map[bool]string{true: "allowed", false: "blocked"}[p.allowed])
			} else {
				t.Logf("%s: %s", p.name, outcome(err))
			}
		}
		// Blocked probes wait out their timeout, so they run together; the allowed ones
		// run one by one (the two DHCP probes share port 68).
		var wg sync.WaitGroup
		for _, p := range probes {
			if !p.allowed {
				wg.Add(1)
				go func() { defer wg.Done(); check(p) }()
			}
		}
		for _, p := range probes {
			if p.allowed {
				check(p)
			}
		}
		wg.Wait()
	})

	// Without any firewall the blocked probes pass: the lab itself is not what blocks.
	t.Run("no rules", func(t *testing.T) {
		l := newLab(t)
		for _, p := range probes {
			if err := p.run(l, waitPass); err != nil {
				t.Errorf("%s with no firewall: %s; the probe cannot tell the firewall from a broken lab", p.name, outcome(err))
			}
		}
	})

	// Each ablation in its own lab (fresh conntrack: no earlier flow can make it pass),
	// a few at a time: they mostly wait.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, p := range probes {
		for _, ab := range p.ablations {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				t.Run(p.name+" without "+strings.Join(ab, "+"), func(t *testing.T) {
					l := newLab(t)
					l.apply(t, ablate(full, ab...))
					err := p.run(l, waitFor(!p.allowed))
					if (err == nil) == p.allowed {
						t.Errorf("%s: %s with %v removed: the probe did not notice the missing rule", p.name, outcome(err), ab)
					}
				})
			}()
		}
	}
	wg.Wait()
}

// Where br_netfilter hands bridged IPv4 to the IP hooks, box to box is dropped twice:
// by the bridge table and by inet box/forward (the bridge is the output interface of a
// bridged packet there). Either layer alone holds; removing both lets the probe pass.
func TestTrafficBrNetfilter(t *testing.T) {
	requireKernel(t)
	guardRootRuleset(t)
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
		testenv.Skip(t, "kernel without br_netfilter: "+err.Error())
	}
	meta, err := DetectBridgeMeta()
	if err != nil {
		t.Fatal(err)
	}
	full, err := Plan(testInputs(meta))
	if err != nil {
		t.Fatal(err)
	}
	p := tcpProbe(boxA, boxBIP+":8080")
	for _, tc := range []struct {
		without []string
		passes  bool
	}{
		{nil, false},
		{[]string{"box-to-box"}, false},
		{[]string{"forward-to-box"}, false},
		{[]string{"box-to-box", "forward-to-box"}, true},
	} {
		l := newLabBrNF(t, true)
		l.apply(t, full.Without(tc.without...))
		if err := p(l, waitFor(tc.passes)); (err == nil) != tc.passes {
			t.Errorf("box A to box B, TCP, br_netfilter on, without %v: %s, want passes=%v", tc.without, outcome(err), tc.passes)
		}
	}
}

// ablate removes the named rules from rs; "NAME/saddr" instead removes only the source
// address matches of rule NAME, to test that one condition.
func ablate(rs Ruleset, names ...string) Ruleset {
	var whole []string
	strip := map[string]bool{}
	for _, n := range names {
		if r, ok := strings.CutSuffix(n, "/saddr"); ok {
			strip[r] = true
		} else {
			whole = append(whole, n)
		}
	}
	out := rs.Without(whole...) // also a deep enough copy: the rules below are rebuilt
	for ti := range out.Tables {
		for ci := range out.Tables[ti].Chains {
			rules := out.Tables[ti].Chains[ci].Rules
			for ri, r := range rules {
				if !strip[r.Name] {
					continue
				}
				var ms []Match
				for _, m := range r.Match {
					if a, ok := m.(Addr); ok && !a.Dst {
						continue
					}
					ms = append(ms, m)
				}
				rules[ri].Match = ms
			}
		}
	}
	return out
}
