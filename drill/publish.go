package drill

// The ports rows (issue 23), both directions, with markers of the drill's own so a row
// never counts a stranger's service as the sandbox's or the host's:
//
//   - inside out: the drill listens on a host loopback port of its own (never a named
//     one) and sends a banner; the sandbox tries it at host.box.internal and its own
//     127.0.0.1. The banner inside = BREACH (ports:host-other). The named host ports
//     must connect at host.box.internal (ports:host-named).
//   - outside in: the runner serves a banner on each published sandbox port and on one
//     port that is not published, and waits; outside, box dials the host's 127.0.0.1 and
//     ::1 at the published host port (the banner must come: ports:published), the host's
//     other addresses at it and the host's loopback at the unpublished port (a banner
//     = BREACH: ports:published-elsewhere), then tells the runner it is done through the
//     published port. A listener on an address other than the loopback answers the LAN
//     as it answers the host itself: the host's own addresses stand for the LAN here
//     (backend/bwrap's live tests dial from the lab's LAN namespace too).
//
// A test build with BOX_UNSAFE_OFF=ports widens the forwarding (the published port on
// every address, every host.box.internal port to the host's loopback): both blocked rows
// then report BREACH (TestDrillPortsWidened).

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
)

// The ports rows' ids.
const (
	PortsHostNamedID        = "ports:host-named"
	PortsHostOtherID        = "ports:host-other"
	PortsPublishedID        = "ports:published"
	PortsPublishedElseID    = "ports:published-elsewhere"
	portsGroup              = "ports"
	portsServeBound         = time.Minute // the runner's wait for the outside's "done", should it never come
	portsBannerPrefix       = "box-drill-port"
	portsPollEvery          = 20 * time.Millisecond
	portsDialTimeout        = 2 * time.Second
	portsReadBannerDeadline = 3 * time.Second
)

// The ports rows' probe kinds.
const (
	// KindHostPortNamed: any of Targets (name:port) connects = seen.
	KindHostPortNamed Kind = "host-port-named"
	// KindHostPortMarker: any of Targets (addr:port) sends the line Marker = seen.
	KindHostPortMarker Kind = "host-port-marker"
	// KindPublishServe: serve "Marker PORT" on 127.0.0.1:PORT for each of Ports until a
	// connection sends "done Marker" (or portsServeBound); the outside judges.
	KindPublishServe Kind = "publish-serve"
	// KindPublishOutside: nothing inside; the outside dials (portsDrill.settle).
	KindPublishOutside Kind = "publish-outside"
)

// portsDrill is the outside's half of the ports rows for one drill run.
type portsDrill struct {
	banner string // "box-drill-port NONCE"
	pub    []publishedPort
	unpub  int // a sandbox port the runner serves that is not published
	addrs  []netip.Addr
	v6     bool // the host has ::1

	marker    net.Listener // the drill's own host loopback port (inside-out)
	markerErr error        // why there is none: the row is an error, never a skip
	cancel    context.CancelFunc
	done      chan struct{}

	mu                sync.Mutex
	pubSeen, elseSeen bool
	pubNote, elseNote string
	watched           bool
}

type publishedPort struct{ host, sandbox int }

// startPorts adds the ports rows to plan and starts the outside's half: the drill's
// marker on the host's loopback and the watcher of the published ports. stop ends it;
// settle (after the run) fills the outside's observations.
func startPorts(p *bwrap.Plan, plan *Plan, addrs []netip.Addr, nonce string) *portsDrill {
	d := &portsDrill{banner: portsBannerPrefix + " " + nonce, done: make(chan struct{})}
	pr := p.Spec.Ports
	named := &Probe{ID: PortsHostNamedID, Group: portsGroup, Name: "the named host ports at " + bwrap.HostAliasName,
		Kind: KindHostPortNamed, Want: Open, Expected: "reachable (the host's 127.0.0.1, those ports only)"}
	other := &Probe{ID: PortsHostOtherID, Group: portsGroup, Name: "another port of the host's loopback (the drill's own listener)",
		Kind: KindHostPortMarker, Want: Blocked, Expected: "unreachable: only the named ports reach the host", Marker: d.banner}
	pub := &Probe{ID: PortsPublishedID, Group: portsGroup, Name: "the published ports from the host's 127.0.0.1 and ::1",
		Kind: KindPublishServe, Want: Open, Expected: "reachable there", Marker: d.banner}
	elsewhere := &Probe{ID: PortsPublishedElseID, Group: portsGroup, Name: "the published ports on the host's other addresses; an unpublished port",
		Kind: KindPublishOutside, Want: Blocked, Expected: "unreachable"}
	rows := []*Probe{named, other, pub, elsewhere}
	skipAll := func(why string) {
		for _, r := range rows {
			r.Skip = why
		}
	}
	switch {
	case p.Isolation.Landlock():
		skipAll("the Landlock mode has no network namespace of its own (box refuses ports there; the net rows judge its network)")
	case !p.Spec.Network.OwnNetNS():
		skipAll(fmt.Sprintf("network %q shares the host's network (box refuses ports there; the net rows judge it)", p.Spec.Network))
	}
	if named.Skip == "" {
		if len(pr.HostPorts) == 0 {
			named.Skip = "no host port named (--host-port, host_ports)"
		}
		for _, h := range pr.HostPorts {
			named.Targets = append(named.Targets, net.JoinHostPort(bwrap.HostAliasName, strconv.Itoa(int(h))))
		}
	}
	if other.Skip == "" {
		// The drill's own listener, on a port the sandbox was not given.
		for range 8 {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				d.markerErr = err
				break
			}
			port := ln.Addr().(*net.TCPAddr).Port
			if slices.Contains(pr.HostPorts, uint16(port)) {
				ln.Close()
				continue
			}
			d.marker = ln
			go serveBanner(ln, d.banner+"\n")
			for _, a := range []string{bwrap.HostAlias.String(), "127.0.0.1"} {
				other.Targets = append(other.Targets, net.JoinHostPort(a, strconv.Itoa(port)))
			}
			break
		}
		if d.marker == nil && d.markerErr == nil {
			d.markerErr = fmt.Errorf("every port the kernel gave is a named host port")
		}
	}
	if pub.Skip == "" {
		if len(pr.Publish) == 0 {
			pub.Skip, elsewhere.Skip = "nothing published (--publish, publish, box expose)", "nothing published (--publish, publish, box expose)"
		}
		taken := map[int]bool{}
		for _, m := range pr.Publish {
			d.pub = append(d.pub, publishedPort{host: int(m.Host), sandbox: int(m.Sandbox)})
			taken[int(m.Host)], taken[int(m.Sandbox)] = true, true
			pub.Ports = append(pub.Ports, int(m.Sandbox))
			pub.Targets = append(pub.Targets, fmt.Sprintf("127.0.0.1:%d", m.Host))
		}
		if len(d.pub) > 0 {
			d.unpub = d.pub[0].sandbox + 1
			for taken[d.unpub] || d.unpub > 65535 {
				d.unpub = (d.unpub % 65535) + 1
			}
			pub.Ports = append(pub.Ports, d.unpub)
		}
		if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
			l.Close()
			d.v6 = true
			for _, m := range d.pub {
				pub.Targets = append(pub.Targets, fmt.Sprintf("[::1]:%d", m.host))
			}
		}
		for _, a := range addrs {
			if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
				continue
			}
			d.addrs = append(d.addrs, a.Unmap())
			for _, m := range d.pub {
				elsewhere.Targets = append(elsewhere.Targets, netip.AddrPortFrom(a.Unmap(), uint16(m.host)).String())
			}
		}
		if d.unpub != 0 {
			elsewhere.Targets = append(elsewhere.Targets, fmt.Sprintf("127.0.0.1:%d", d.unpub))
		}
	}
	for _, r := range rows {
		plan.Probes = append(plan.Probes, *r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	if len(d.pub) > 0 && pub.Skip == "" {
		go func() { defer close(d.done); d.watch(ctx) }()
	} else {
		close(d.done)
	}
	return d
}

// stop ends the outside's half (idempotent).
func (d *portsDrill) stop() {
	d.cancel()
	<-d.done
	if d.marker != nil {
		d.marker.Close()
	}
}

// settle puts the outside's findings into the published rows' observations.
func (d *portsDrill) settle(obs []Observation) []Observation {
	d.stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range obs {
		o := &obs[i]
		if o.Err != "" {
			continue
		}
		switch o.ID {
		case PortsHostOtherID:
			if d.markerErr != nil {
				o.Err = "the drill's own host loopback listener: " + d.markerErr.Error()
			}
		case PortsPublishedID:
			o.Seen, o.Detail = d.pubSeen, d.pubNote+"; inside: "+o.Detail
		case PortsPublishedElseID:
			if !d.watched {
				o.Err = "not checked: the published ports never answered on the host's loopback"
				continue
			}
			o.Seen, o.Detail = d.elseSeen, d.elseNote
		}
	}
	return obs
}

// watch waits until every published port shows the runner's banner on the host's
// 127.0.0.1 (the sandbox is up), dials the other places, and tells the runner it is done.
func (d *portsDrill) watch(ctx context.Context) {
	var pubNotes, elseNotes []string
	pubOK := true
	for _, m := range d.pub {
		want := fmt.Sprintf("%s %d", d.banner, m.sandbox)
		for {
			if banner(ctx, fmt.Sprintf("127.0.0.1:%d", m.host)) == want {
				break
			}
			select {
			case <-ctx.Done():
				d.mu.Lock()
				d.pubNote = fmt.Sprintf("127.0.0.1:%d never answered with the sandbox's port %d", m.host, m.sandbox)
				d.mu.Unlock()
				return
			case <-time.After(portsPollEvery):
			}
		}
		pubNotes = append(pubNotes, fmt.Sprintf("127.0.0.1:%d answers", m.host))
		if d.v6 {
			if banner(ctx, fmt.Sprintf("[::1]:%d", m.host)) == want {
				pubNotes = append(pubNotes, fmt.Sprintf("[::1]:%d answers", m.host))
			} else {
				pubOK = false
				pubNotes = append(pubNotes, fmt.Sprintf("[::1]:%d does not answer (the host has ::1)", m.host))
			}
		}
		for _, a := range d.addrs {
			t := netip.AddrPortFrom(a, uint16(m.host)).String()
			if banner(ctx, t) == want {
				elseNotes = append(elseNotes, t+" ANSWERS with the sandbox's port")
			}
		}
	}
	unwant := fmt.Sprintf("%s %d", d.banner, d.unpub)
	for _, t := range []string{fmt.Sprintf("127.0.0.1:%d", d.unpub), fmt.Sprintf("[::1]:%d", d.unpub)} {
		if banner(ctx, t) == unwant {
			elseNotes = append(elseNotes, t+" ANSWERS with the sandbox's unpublished port")
		}
	}
	d.mu.Lock()
	d.watched, d.pubSeen, d.pubNote = true, pubOK, strings.Join(pubNotes, ", ")
	d.elseSeen = len(elseNotes) > 0
	d.elseNote = strings.Join(elseNotes, "; ")
	if !d.elseSeen {
		d.elseNote = fmt.Sprintf("no banner on %d other address(es) nor at the unpublished port %d", len(d.addrs), d.unpub)
	}
	d.mu.Unlock()
	// Done: the runner stops serving.
	if c, err := net.DialTimeout("tcp4", fmt.Sprintf("127.0.0.1:%d", d.pub[0].host), portsDialTimeout); err == nil {
		fmt.Fprintf(c, "done %s\n", d.banner)
		bufio.NewReader(c).ReadString('\n') // its banner, then its close: the runner has it
		c.Close()
	}
}

// banner is the first line target sends ("" when it sends none).
func banner(ctx context.Context, target string) string {
	dctx, cancel := context.WithTimeout(ctx, portsDialTimeout)
	defer cancel()
	var dl net.Dialer
	c, err := dl.DialContext(dctx, "tcp", target)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(portsReadBannerDeadline))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n")
}

// serveBanner sends msg on every connection to ln until ln closes.
func serveBanner(ln net.Listener, msg string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(msg))
		c.Close()
	}
}

// probePorts runs the ports rows inside (the runner's kinds not in probe.go's switch).
func (r *runner) probePorts(pr Probe) (bool, string, error) {
	switch pr.Kind {
	case KindHostPortNamed:
		var got []string
		for _, t := range pr.Targets {
			c, err := net.DialTimeout("tcp", t, r.timeout)
			if err != nil {
				return false, t + ": " + errName(err), nil
			}
			c.Close()
			got = append(got, t)
		}
		return true, "connected: " + strings.Join(got, ", "), nil
	case KindHostPortMarker:
		var seen []string
		for _, t := range pr.Targets {
			if banner(context.Background(), t) == pr.Marker {
				seen = append(seen, t)
			}
		}
		if len(seen) > 0 {
			return true, "the host's own listener answered at " + strings.Join(seen, ", "), nil
		}
		return false, "no answer from the host's listener", nil
	case KindPublishServe:
		return false, servePublished(pr), nil
	case KindPublishOutside:
		return false, "(judged outside)", nil
	}
	return false, "", fmt.Errorf("unknown probe kind %q", pr.Kind)
}

// servePublished serves the banner on each of pr.Ports (127.0.0.1) until the outside says
// done, or portsServeBound passes; it says what happened.
func servePublished(pr Probe) string {
	done := make(chan struct{})
	var once sync.Once
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for _, port := range pr.Ports {
		ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return fmt.Sprintf("could not listen on 127.0.0.1:%d: %v", port, err)
		}
		lns = append(lns, ln)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					fmt.Fprintf(c, "%s %d\n", pr.Marker, port)
					c.SetReadDeadline(time.Now().Add(portsReadBannerDeadline))
					if line, _ := bufio.NewReader(c).ReadString('\n'); line == "done "+pr.Marker+"\n" {
						once.Do(func() { close(done) })
					}
				}()
			}
		}()
	}
	select {
	case <-done:
		return fmt.Sprintf("served ports %s until the outside was done", intList(pr.Ports))
	case <-time.After(portsServeBound):
		return fmt.Sprintf("served ports %s; the outside never said done", intList(pr.Ports))
	}
}

func intList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
