package drill

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/host"
)

// The vm drill: the stack checked object by object (host.Doctor, one row per
// invariant), then two boxes minted on the placement profile and probed live from inside
// box A (through the Incus exec API, with the tools of the image: curl, nc, ping,
// getent, ip) and from the host; and an instance box did not mint, aimed at by every
// box verb (verbs.go); an export crafted to write on the host, handed to box import
// (importrow.go). All of them are deleted at the end.

// VMOptions tune the vm drill.
type VMOptions struct {
	Client *incus.Client
	// Mint mints a box named name the way box new does (the CLI runs box new itself);
	// the drill then waits for its lease. Image is that template's image, for the
	// instance box did not mint of the verbs row.
	Mint    func(ctx context.Context, name string) error
	Image   string
	Bridge  string // default host.BridgeName
	Profile string // default host.ProfileName
	UnitDir string // for the boot-unit stack row (default host.DefaultUnitDir)
	// InternetURL is fetched from inside a box (must pass); its host name, or DNSName
	// when set, is looked up (must pass).
	InternetURL string
	DNSName     string
	// HostPorts are TCP ports of host services probed on the gateway and the host's
	// public addresses (empty: the ports the host listens on, else 22).
	HostPorts []int
	// LAN targets (ADDR:PORT) probed from a box (the host's default gateway is added).
	LAN []string
	// Metadata is the cloud metadata service (default 169.254.169.254:80).
	Metadata string
	// Verbs runs box's own verbs, for the row "every verb refuses an instance box did
	// not mint" (nil: that row is an ERROR).
	Verbs VerbRunner
	// ProbeBinary is the box binary pushed into both boxes for the sibling:fds-in-flight
	// row (its hidden InflightSubcommand); "" makes that row an ERROR.
	ProbeBinary string
	Logf        func(string, ...any)
}

// SiblingPort is where box B listens for the sibling and host-to-box probes.
const SiblingPort = 7777

type vmProbe struct {
	id, group, name, expected string
	targets                   []string
	want                      Want
	run                       func(ctx context.Context) (seen bool, detail string, err error)
}

// RunVM runs the vm drill and returns its rows. An error means the drill itself could
// not run (no boxes could be minted); probes that cannot run are ERROR rows.
func RunVM(ctx context.Context, o VMOptions) ([]Result, error) {
	c := o.Client
	br := orDefault(o.Bridge, host.BridgeName)
	prof := orDefault(o.Profile, host.ProfileName)
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if o.InternetURL == "" {
		o.InternetURL = DefaultInternetURL
	}
	u, err := url.Parse(o.InternetURL)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("internet URL %q: want http://HOST/...", o.InternetURL)
	}
	dnsName := o.DNSName
	if dnsName == "" {
		if _, err := netip.ParseAddr(u.Hostname()); err != nil {
			dnsName = u.Hostname()
		}
	}
	if o.Metadata == "" {
		o.Metadata = "169.254.169.254:80"
	}

	// The stack, object by object: a missing layer is a FAIL even when another layer
	// still stops the traffic.
	var results []Result
	for _, ck := range host.Doctor(ctx, c, host.DoctorOptions{Bridge: br, UnitDir: o.UnitDir}) {
		r := Result{ID: "stack:" + strings.ReplaceAll(ck.Name, " ", "-"), Group: "stack", Probe: ck.Name,
			Targets: []string{}, Expected: "in place", Observed: ck.Detail}
		switch ck.Status {
		case host.OK:
			r.Status = Pass
		case host.Warn:
			r.Status = Warn
		default:
			r.Status = Fail
			if ck.Fix != "" {
				r.Observed += " (fix: " + ck.Fix + ")"
			}
		}
		results = append(results, r)
	}
	netw, err := c.Network(ctx, br)
	if err != nil {
		return results, err
	}
	gw, err := host.ParseGateway(netw.Config["ipv4.address"])
	if err != nil {
		return results, fmt.Errorf("bridge %s: %w", br, err)
	}
	if _, err := c.RootPool(ctx, prof); err != nil {
		return results, err
	}

	// Two boxes, minted as box mints them.
	nonce := make([]byte, 3)
	rand.Read(nonce)
	a, b := "drill-"+hex.EncodeToString(nonce)+"-a", "drill-"+hex.EncodeToString(nonce)+"-b"
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		for _, n := range []string{a, b} {
			_ = c.Stop(cctx, n, 0, true)
			if err := c.Delete(cctx, n); err != nil && !incus.IsNotFound(err) {
				logf("drill: could not delete %s: %v", n, err)
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	ips := make([]string, 2)
	errs := make([]error, 2)
	for i, n := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ips[i], errs[i] = mintBox(ctx, c, o.Mint, n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return results, err
	}
	ipA, ipB := ips[0], ips[1]
	logf("drill: boxes %s (%s) and %s (%s) up in %s", a, ipA, b, ipB, time.Since(start).Round(time.Millisecond))

	// A's resolver first: a box just up may not have the lease-given DNS server yet,
	// and a name probe that fails for that would pass for "blocked". The public name
	// resolving is the control (its own row says when it never does).
	if dnsName != "" {
		_, _, _ = execSh(ctx, c, a, "for i in $(seq 40); do getent hosts "+shellQuote(dnsName)+" >/dev/null && exit 0; sleep 0.5; done; exit 1")
	}

	// B listens, for the sibling and host-to-box probes; proven from inside B, so a
	// blocked probe means blocked, not "nothing listening".
	listenErr := listen(ctx, c, b, SiblingPort)
	llB := linkLocal(ctx, c, b)

	sh := func(cmd string) func(ctx context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			code, out, err := execSh(ctx, c, a, cmd)
			if err != nil {
				return false, "", err
			}
			return code == 0, summarize(code, out), nil
		}
	}
	needListener := func(f func(context.Context) (bool, string, error)) func(context.Context) (bool, string, error) {
		return func(ctx context.Context) (bool, string, error) {
			if listenErr != nil {
				return false, "", listenErr
			}
			return f(ctx)
		}
	}
	gwAddr := gw.Addr().String()
	hostPorts := o.HostPorts
	if len(hostPorts) == 0 {
		hostPorts = []int{22}
	}
	var probes []vmProbe
	add := func(p vmProbe) { probes = append(probes, p) }

	add(vmProbe{id: "net:internet-http", group: "internet", name: "box → the internet over HTTP",
		targets: []string{o.InternetURL}, want: Open, expected: "reachable",
		// Asked a few times, as the DNS probe is: a box just up may not have its
		// resolver's lease-given server yet.
		run: sh("for i in 1 2 3 4 5; do out=$(curl -fsS -o /dev/null -w 'HTTP %{http_code}' --max-time 8 " + shellQuote(o.InternetURL) +
			" 2>&1) && { echo \"$out\"; exit 0; }; sleep 1; done; echo \"$out\"; exit 1")})
	if dnsName != "" {
		add(vmProbe{id: "net:internet-dns", group: "internet", name: "box → DNS of a public name (" + dnsName + ")",
			targets: []string{dnsName}, want: Open, expected: "resolves",
			run: sh("for i in 1 2 3 4 5; do getent hosts " + shellQuote(dnsName) + " && exit 0; sleep 1; done; exit 2")})
	}
	for _, p := range hostPorts {
		add(gatewayProbe(gwAddr, p, sh(ncZ(gwAddr, p))))
	}
	for _, ha := range host.PublicHostAddrs(host.LocalAddrs()) {
		for _, p := range hostPorts {
			t := net.JoinHostPort(ha.String(), strconv.Itoa(p))
			add(vmProbe{id: "host:public:" + t, group: "host", name: "box → the host's public address " + t,
				targets: []string{t}, want: Blocked, expected: "unreachable", run: sh(ncZ(ha.String(), p))})
		}
	}
	lan := slices.Clone(o.LAN)
	for _, g := range defaultGateways() {
		lan = append(lan, net.JoinHostPort(g.String(), "80"))
	}
	slices.Sort(lan)
	for _, t := range slices.Compact(lan) {
		h, p, err := net.SplitHostPort(t)
		port, _ := strconv.Atoi(p)
		if err != nil || port == 0 {
			return results, fmt.Errorf("LAN target %q: want ADDR:PORT", t)
		}
		add(vmProbe{id: "lan:" + t, group: "lan", name: "box → the LAN " + t,
			targets: []string{t}, want: Blocked, expected: "unreachable", run: sh(ncZ(h, port))})
	}
	if h, p, err := net.SplitHostPort(o.Metadata); err == nil {
		port, _ := strconv.Atoi(p)
		add(vmProbe{id: "lan:metadata", group: "lan", name: "box → the metadata address " + o.Metadata,
			targets: []string{o.Metadata}, want: Blocked, expected: "unreachable", run: sh(ncZ(h, port))})
	}
	add(vmProbe{id: "sibling:icmp", group: "siblings", name: "box → the other box: ping " + ipB,
		targets: []string{ipB}, want: Blocked, expected: "unreachable", run: sh("ping -n -c3 -i0.5 -W2 " + ipB)})
	add(vmProbe{id: "sibling:tcp", group: "siblings", name: fmt.Sprintf("box → the other box: TCP %s:%d", ipB, SiblingPort),
		targets: []string{fmt.Sprintf("%s:%d", ipB, SiblingPort)}, want: Blocked, expected: "unreachable",
		run: needListener(sh(ncZ(ipB, SiblingPort)))})
	if llB != "" {
		add(vmProbe{id: "sibling:ipv6-link-local", group: "siblings", name: "box → the other box over IPv6 link-local " + llB,
			targets: []string{llB}, want: Blocked, expected: "unreachable", run: sh("sleep 1; ping -6 -n -c4 -i0.5 -W2 " + llB + "%eth0")})
	}
	add(vmProbe{id: "sibling:getent", group: "siblings", name: "getent hosts " + b,
		targets: []string{b}, want: Blocked, expected: "no answer", run: sh("getent hosts " + b)})
	add(vmProbe{id: "sibling:getent-incus", group: "siblings", name: "getent hosts " + b + ".incus",
		targets: []string{b + ".incus"}, want: Blocked, expected: "no answer", run: sh("getent hosts " + b + ".incus")})
	add(vmProbe{id: "sibling:gateway-dns", group: "siblings", name: "the gateway's DNS asked for the bare name " + b,
		targets: []string{gwAddr + ":53"}, want: Blocked, expected: "no answer",
		run: func(ctx context.Context) (bool, string, error) { return dnsAsk(ctx, c, a, gwAddr, b) }})
	add(vmProbe{id: "ipv6:bridge", group: "ipv6", name: "IPv6 off: the bridge's ipv6.address",
		targets: []string{br}, want: Open, expected: "none",
		run: func(ctx context.Context) (bool, string, error) {
			n, err := c.Network(ctx, br)
			if err != nil {
				return false, "", err
			}
			return n.Config["ipv6.address"] == "none", "ipv6.address=" + orDefault(n.Config["ipv6.address"], "(unset)"), nil
		}})
	add(vmProbe{id: "ipv6:box", group: "ipv6", name: "IPv6 off: a global IPv6 address or route in the box",
		targets: []string{a}, want: Blocked, expected: "none",
		run: func(ctx context.Context) (bool, string, error) {
			_, out, err := execSh(ctx, c, a, "for i in 1 2 3; do ip -6 -o addr show scope global; ip -6 route show default; sleep 1; done")
			if err != nil {
				return false, "", err
			}
			out = strings.TrimSpace(out)
			if out == "" {
				return false, "none", nil
			}
			return true, strings.SplitN(out, "\n", 2)[0], nil
		}})
	add(vmProbe{id: "host-to-box:tcp", group: "host-to-box", name: fmt.Sprintf("host → box: TCP %s:%d", ipB, SiblingPort),
		targets: []string{fmt.Sprintf("%s:%d", ipB, SiblingPort)}, want: Blocked, expected: "unreachable",
		run: needListener(func(ctx context.Context) (bool, string, error) {
			d := net.Dialer{Timeout: 3 * time.Second}
			conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ipB, strconv.Itoa(SiblingPort)))
			if err != nil {
				return false, errName(err), nil
			}
			conn.Close()
			return true, "connected", nil
		})})

	// The door rows open box expose's door on B (listening on every address) and run
	// alongside the network probes.
	var doorRows []Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		if listenErr != nil {
			doorRows = DoorError(listenErr)
			return
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		doorRows = DoorProbes(dctx, DoorOptions{Client: c, Box: b, Port: SiblingPort})
	}()

	// The verbs row makes its own instance and runs alongside the network probes.
	var verbsRow Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		vctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		verbsRow = UntaggedVerbs(vctx, UntaggedOptions{Client: c, Image: o.Image, Profile: prof, Run: o.Verbs, Logf: logf})
	}()

	// The import row mints, exports and imports its own box, alongside too.
	var importRow Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		ictx, cancel := context.WithTimeout(ctx, 8*time.Minute)
		defer cancel()
		importRow = CraftedImport(ictx, CraftedImportOptions{Client: c, Mint: o.Mint, Run: o.Verbs, Logf: logf})
	}()

	// The terminal row runs box exec in A on a terminal of the drill's (vmterminal.go).
	var termRow Result
	wg.Add(1)
	go func() {
		defer wg.Done()
		tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		termRow = VMTerminalStrings(tctx, c, o.Verbs, a)
	}()

	// Probes run concurrently: most blocked ones wait out a timeout.
	rows := make([]Result, len(probes))
	sem := make(chan struct{}, 16)
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			seen, detail, err := p.run(pctx)
			rows[i] = p.judge(seen, detail, err)
		}()
	}
	wg.Wait()
	// The ARP claim runs alone, after the others: while it holds, what the host sends
	// to B goes to A, which would change what the host-to-box probe sees.
	claim := vmProbe{id: "sibling:arp-claim", group: "siblings",
		name:    "box → the host: claim the other box's address " + ipB + " (ARP from it to the gateway)",
		targets: []string{ipB}, want: Blocked, expected: "the host's ARP entry stays the other box's",
		run: func(ctx context.Context) (bool, string, error) {
			return arpClaim(ctx, c, a, b, ipB, gwAddr, br, "/proc/net/arp")
		}}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	seen, detail, err := claim.run(cctx)
	ccancel()
	rows = append(rows, claim.judge(seen, detail, err))
	rows = append(rows, SiblingIDRows(ctx, c, o.ProbeBinary, a, b)...)
	return append(append(append(results, rows...), doorRows...), verbsRow, importRow, termRow), nil
}

// arpClaim does what a box's root does to take a sibling's traffic: it puts the
// sibling's address ipB on its own eth0 and asks the gateway from it, so the ARP request
// says "ipB is at A's MAC" and the host's ARP code learns that (a request to one of the
// host's addresses updates the sender's entry). Seen when the host's ARP table (arpPath,
// of the namespace the drill runs in: the host's) names A's MAC for ipB on the bridge:
// the host then sends A what is B's (the replies of B's connections, B's DNS answers).
//
// A blocked claim leaves no trace of its own, so the probe proves it was made and judged
// (claim.judge): first B asks the gateway itself, so the host's entry for ipB names B's
// MAC (without that, an entry that is absent after the claim says nothing); then each try
// reads A's own entry for the gateway: a request that went out from ipB and was dropped
// leaves it unanswered, while one from A's own address (other traffic of A's racing the
// claim) gets an answer and tests nothing. A waits out the host's neighbour lock time
// (1 s) between tries, as an attacker would.
func arpClaim(ctx context.Context, c *incus.Client, a, b, ipB, gw, br, arpPath string) (bool, string, error) {
	var macs [2]string
	for i, n := range []string{a, b} {
		st, err := c.State(ctx, n)
		if err != nil {
			return false, "", err
		}
		if macs[i] = strings.ToLower(st.Network["eth0"].Hwaddr); macs[i] == "" {
			return false, "", fmt.Errorf("box %s: eth0 has no MAC address in its state", n)
		}
	}
	cl := claim{ipB: ipB, macA: macs[0], macB: macs[1], a: a, b: b}
	hostEntry := func() (string, error) {
		entries, err := ARPEntries(arpPath)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Addr == ipB && e.Device == br {
				return e.MAC, nil
			}
		}
		return "none", nil
	}
	for range 3 {
		if _, _, err := execSh(ctx, c, b, "ip neigh flush dev eth0; ping -n -c1 -W1 "+gw+" >/dev/null 2>&1; true"); err != nil {
			return false, "", err
		}
		e, err := hostEntry()
		if err != nil {
			return false, "", err
		}
		if cl.before = e; e == cl.macB {
			break
		}
	}
	if cl.before == cl.macB {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _, _ = execSh(dctx, c, a, "ip addr del "+ipB+"/32 dev eth0")
		}()
		_, out, err := execSh(ctx, c, a, "ip addr add "+ipB+"/32 dev eth0 2>&1; ip -4 -o addr show dev eth0")
		if err != nil {
			return false, "", err
		}
		cl.added = strings.Contains(out, " "+ipB+"/32 ")
	}
	for cl.ready() && len(cl.tries) < 3 {
		_, out, err := execSh(ctx, c, a, "sleep 1.1; ip neigh flush dev eth0; ping -n -c1 -W1 -I "+ipB+" "+gw+" >/dev/null 2>&1; ip neigh show "+gw+" dev eth0")
		if err != nil {
			return false, "", err
		}
		e, err := hostEntry()
		if err != nil {
			return false, "", err
		}
		cl.tries = append(cl.tries, claimTry{gwEntry: strings.TrimSpace(out), host: e})
		if e == cl.macA {
			break
		}
	}
	return cl.judge()
}

// claim is what the ARP claim probe saw: the host's entry for B's address before the
// claim, whether A took the address, and each try.
type claim struct {
	ipB, macA, macB, a, b string
	before                string // the host's entry for ipB after B asked the gateway
	added                 bool   // ipB is on A's eth0
	tries                 []claimTry
}

type claimTry struct {
	gwEntry string // A's neighbour entry for the gateway after its request from ipB (ip neigh show)
	host    string // the host's entry for ipB after it: a MAC or "none"
}

func (cl claim) ready() bool { return cl.before == cl.macB && cl.added }

// unanswered: A asked for the gateway and got no answer (its entry is not resolved).
func (t claimTry) unanswered() bool {
	f := strings.Fields(t.gwEntry)
	if len(f) == 0 {
		return false // no entry: A never asked
	}
	switch f[len(f)-1] {
	case "INCOMPLETE", "FAILED":
		return true
	}
	return false
}

// judge: a BREACH when the host's entry for ipB named A's MAC after a try; a PASS only
// when the claim was made and held off: the entry named B's MAC before it, and after a
// try in which A's request from ipB went unanswered it still did. Anything else is an
// error (the row's ERROR): the probe did not get to test, and says what it saw.
func (cl claim) judge() (bool, string, error) {
	for _, t := range cl.tries {
		if t.host == cl.macA {
			return true, fmt.Sprintf("the host's ARP entry for %s names box %s's MAC %s: the host sends it the other box's traffic", cl.ipB, cl.a, cl.macA), nil
		}
	}
	if cl.before != cl.macB {
		return false, "", fmt.Errorf("the claim was not made: the host's ARP entry for %s is %s after box %s asked the gateway itself, want its MAC %s", cl.ipB, cl.before, cl.b, cl.macB)
	}
	if !cl.added {
		return false, "", fmt.Errorf("the claim was not made: %s is not on box %s's eth0 after ip addr add", cl.ipB, cl.a)
	}
	var seen []string
	for _, t := range cl.tries {
		if t.unanswered() && t.host == cl.macB {
			return false, fmt.Sprintf("the host's ARP entry for %s stays box %s's MAC %s; box %s's request from it went unanswered (%s)", cl.ipB, cl.b, cl.macB, cl.a, t.gwEntry), nil
		}
		seen = append(seen, fmt.Sprintf("A's gateway entry %q, the host's entry %s", t.gwEntry, t.host))
	}
	return false, "", fmt.Errorf("the claim was not judged: no try had box %s's request from %s unanswered with the host's entry still %s's MAC %s (%s)", cl.a, cl.ipB, cl.b, cl.macB, strings.Join(seen, "; "))
}

// ARPEntry is one line of /proc/net/arp.
type ARPEntry struct{ Addr, MAC, Device string }

// ARPEntries reads a /proc/net/arp file (IP address, HW type, Flags, HW address, Mask,
// Device). A file it cannot read is an error: the claim probe cannot judge without it.
func ARPEntries(path string) ([]ARPEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the host's ARP table: %w", err)
	}
	var out []ARPEntry
	for i, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if i == 0 || len(fs) < 6 {
			continue
		}
		out = append(out, ARPEntry{Addr: fs[0], MAC: strings.ToLower(fs[3]), Device: fs[5]})
	}
	return out, nil
}

// judge turns what a probe saw into its row.
func (p vmProbe) judge(seen bool, detail string, err error) Result {
	r := Result{ID: p.id, Group: p.group, Probe: p.name, Targets: p.targets, Expected: p.expected}
	return judged(r, p.want, seen, detail, err)
}

// judged fills r's status from what its probe saw: an error is ERROR, seen where it
// should be blocked BREACH, not seen where it should be open FAIL, else PASS.
func judged(r Result, want Want, seen bool, detail string, err error) Result {
	switch {
	case err != nil:
		r.Status, r.Observed = Error, "error: "+err.Error()
	case want == Blocked && seen:
		r.Status, r.Observed = Breach, detail
	case want == Open && !seen:
		r.Status, r.Observed = Fail, detail
	default:
		r.Status, r.Observed = Pass, detail
	}
	return r
}

// gatewayProbe is the row of a host service on the gateway: unreachable from a box,
// except the contract's carve-out (DNS over TCP to the gateway), which must work and is
// judged as the exception it is, never as a breach.
func gatewayProbe(gw string, port int, run func(context.Context) (bool, string, error)) vmProbe {
	t := net.JoinHostPort(gw, strconv.Itoa(port))
	p := vmProbe{id: "host:gateway:" + strconv.Itoa(port), group: "host", name: "box → the host at the gateway " + t,
		targets: []string{t}, want: Blocked, expected: "unreachable", run: run}
	if host.GatewayCarveOut(port) {
		p.name = "box → the gateway's DNS over TCP " + t + " (the contract's carve-out)"
		p.want, p.expected = Open, "reachable: DNS to the gateway is allowed"
	}
	return p
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// mintBox mints name with mint and waits for its lease.
func mintBox(ctx context.Context, c *incus.Client, mint func(context.Context, string) error, name string) (string, error) {
	if mint == nil {
		return "", errors.New("no way to mint the drill's boxes (VMOptions.Mint)")
	}
	if err := mint(ctx, name); err != nil {
		return "", fmt.Errorf("mint %s: %w", name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	ip, err := c.WaitIPv4(wctx, name, "eth0")
	if err != nil {
		return "", fmt.Errorf("%s: no IPv4 address: %w", name, err)
	}
	return ip, nil
}

func execSh(ctx context.Context, c *incus.Client, name, cmd string) (int, string, error) {
	var out bytes.Buffer
	code, err := c.Exec(ctx, name, incus.Exec{Command: []string{"sh", "-c", cmd}, Stdout: &out, Stderr: &out})
	return code, out.String(), err
}

func listen(ctx context.Context, c *incus.Client, name string, port int) error {
	cmd := fmt.Sprintf("nohup nc -lk %d </dev/null >/dev/null 2>&1 & for i in $(seq 50); do nc -z -w1 127.0.0.1 %d && exit 0; sleep 0.1; done; exit 1", port, port)
	code, out, err := execSh(ctx, c, name, cmd)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("no listener on %s:%d (exit %d: %s)", name, port, code, strings.TrimSpace(out))
	}
	return nil
}

func linkLocal(ctx context.Context, c *incus.Client, name string) string {
	st, err := c.State(ctx, name)
	if err != nil {
		return ""
	}
	for _, a := range st.Network["eth0"].Addresses {
		if a.Family == "inet6" && a.Scope == "link" {
			return a.Address
		}
	}
	return ""
}

// ncZ connects to addr:port; a refused connection counts as reached (exit 0): the
// packet got there, so "nothing listens" never passes for "blocked".
func ncZ(addr string, port int) string {
	return fmt.Sprintf("out=$(nc -vz -w3 %s %d 2>&1); rc=$?; echo \"$out\"; case \"$out\" in *refused*) exit 0;; esac; exit $rc", addr, port)
}

func summarize(code int, out string) string {
	out = strings.TrimSpace(out)
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		out = out[:i]
	}
	if code == 0 {
		if out == "" {
			return "succeeded"
		}
		return "succeeded: " + out
	}
	if out == "" {
		return fmt.Sprintf("failed (exit %d)", code)
	}
	return fmt.Sprintf("failed (exit %d): %s", code, out)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// dnsAsk sends one A query for name straight to server:53 from inside the box (nc -u,
// the query built here) and reports whether an address came back.
func dnsAsk(ctx context.Context, c *incus.Client, box, server, name string) (bool, string, error) {
	q := DNSQuery(0x4242, name)
	var out bytes.Buffer
	code, err := c.Exec(ctx, box, incus.Exec{Command: []string{"nc", "-u", "-w2", server, "53"},
		Stdin: bytes.NewReader(q), Stdout: &out})
	if err != nil {
		return false, "", err
	}
	ans, rcode, ok := DNSAnswers(out.Bytes(), 0x4242)
	switch {
	case !ok:
		return false, fmt.Sprintf("no answer (nc exit %d)", code), nil
	case ans > 0:
		return true, fmt.Sprintf("%d address(es) returned", ans), nil
	default:
		return false, fmt.Sprintf("no address (rcode %d)", rcode), nil
	}
}

// DNSQuery builds a DNS query for name's A record.
func DNSQuery(id uint16, name string) []byte {
	b := binary.BigEndian.AppendUint16(nil, id)
	b = append(b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0) // RD; QDCOUNT 1
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0, 0, 1, 0, 1) // root, QTYPE A, QCLASS IN
}

// DNSAnswers reads a DNS response's answer count and rcode; ok is false when msg is not
// a response to id.
func DNSAnswers(msg []byte, id uint16) (answers int, rcode int, ok bool) {
	if len(msg) < 12 || binary.BigEndian.Uint16(msg) != id || msg[2]&0x80 == 0 {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint16(msg[6:])), int(msg[3] & 0x0f), true
}

func defaultGateways() []netip.Addr { return gateways("/proc/net/route") }

// HostListening returns the TCP ports the host listens on (wildcard or one of its own
// addresses), for the host-address probes.
func HostListening() []int { return listening(host.LocalAddrs(), "/proc/net/tcp", "/proc/net/tcp6") }
