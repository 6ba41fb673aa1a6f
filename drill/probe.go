package drill

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/envaudit"
)

// ProbeMain is the in-sandbox runner (`box __probe`): it reads a Plan as JSON on stdin,
// runs every probe that is not skipped and prints the Observations as a JSON array on
// stdout. It returns 0 when it could report, whatever it saw; 1 when it could not.
func ProbeMain(stdin io.Reader, stdout, stderr io.Writer) int {
	var p Plan
	if err := json.NewDecoder(stdin).Decode(&p); err != nil {
		fmt.Fprintf(stderr, "box: error: probe: reading the plan: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(stdout).Encode(RunPlan(p)); err != nil {
		fmt.Fprintf(stderr, "box: error: probe: %v\n", err)
		return 1
	}
	return 0
}

// RunPlan runs the plan's probes where it is called. The process-counting probe runs
// first, before any probe starts a child; network probes run concurrently.
func RunPlan(p Plan) []Observation {
	timeout := time.Duration(p.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	r := &runner{plan: p, timeout: timeout, local: localAddrs()}
	out := make([]Observation, len(p.Probes))
	var wg sync.WaitGroup
	order := slices.Clone(p.Probes)
	slices.SortStableFunc(order, func(a, b Probe) int {
		return boolInt(b.Kind == KindPIDs) - boolInt(a.Kind == KindPIDs)
	})
	index := map[string]int{}
	for i, pr := range p.Probes {
		index[pr.ID] = i
	}
	var late []Probe
	for _, pr := range order {
		i := index[pr.ID]
		if pr.Skip != "" {
			out[i] = Observation{ID: pr.ID, Detail: "skipped"}
			continue
		}
		switch pr.Kind {
		case KindHTTP, KindTCP, KindGateway, KindAbstract, KindUDP, KindICMP:
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = r.run(pr) }()
		case KindPidsBound, KindMemoryBound, KindLoopbackRename: // the rename takes the links down
			late = append(late, pr)
		default:
			out[i] = r.run(pr)
		}
	}
	wg.Wait()
	// Last and alone: at the pids or memory limit, anything else running (a thread the
	// Go runtime starts, a probe's allocation) could fail or be killed.
	for _, pr := range late {
		out[index[pr.ID]] = r.run(pr)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type runner struct {
	plan    Plan
	timeout time.Duration
	local   map[netip.Addr]bool
}

func (r *runner) run(pr Probe) (o Observation) {
	o.ID = pr.ID
	defer func() {
		if v := recover(); v != nil {
			o.Err = fmt.Sprint("panic: ", v)
		}
	}()
	var err error
	switch pr.Kind {
	case KindPath:
		o.Seen, o.Detail = probePaths(pr.Targets)
		o.Inodes = inodes(pr.Targets)
	case KindEnv:
		o.Seen, o.Detail = probeEnv(pr.Targets)
	case KindEnvScan:
		o.Seen, o.Detail = probeEnvScan(pr.Targets)
	case KindAbstract:
		o.Seen, o.Detail = r.probeAbstract(pr.Targets)
	case KindUnixPath:
		o.Seen, o.Detail, err = r.probeUnixPath(pr.Targets)
	case KindPIDs:
		o.Seen, o.Detail, err = probePIDs(r.plan)
	case KindNoNewPrivs:
		o.Seen, o.Detail, err = probeNoNewPrivs()
	case KindCaps:
		o.Seen, o.Detail, err = probeCaps()
	case KindSetuid:
		o.Seen, o.Detail, err = probeSetuid(pr.Targets)
	case KindUserns:
		o.Seen, o.Detail = probeUserns()
	case KindWrite:
		o.Seen, o.Detail = probeWrite(pr.Targets)
	case KindHTTP:
		o.Seen, o.Detail = r.probeHTTP(pr.Targets)
	case KindTCP:
		o.Seen, o.Detail = r.probeTCP(pr.Targets)
	case KindGateway:
		o.Seen, o.Detail = r.probeGateway(pr.Ports)
	case KindPlant:
		o.Seen, o.Detail = probePlant(pr.Plant)
	case KindLoosened:
		o.Seen, o.Detail = true, "dropped from the protected set by the profile: the sandbox can change it"
	case KindFD:
		o.Seen, o.Detail, err = probeFD(pr.Targets)
	case KindKeyring:
		o.Seen, o.Detail = probeKeyring(pr.Targets)
	case KindSysVShm:
		o.Seen, o.Detail, err = probeSysVShm(pr.Targets)
	case KindSeccomp:
		o.Seen, o.Detail, err = probeSeccomp()
	case KindSyscall:
		o.Seen, o.Detail, err = probeSyscalls(pr.Targets)
	case KindSocket:
		o.Seen, o.Detail = probeSockets(pr.Targets)
	case KindTraceInit:
		o.Seen, o.Detail, err = probeTraceInit()
	case KindTermExcl:
		o.Seen, o.Detail, err = probeTermExclusive()
	case KindTerminal:
		o.Seen, o.Detail, err = probeTerminal()
	case KindHostTTY:
		o.Seen, o.Detail, err = probeHostTTY(pr.Targets)
	case KindTermStrings:
		o.Seen, o.Detail, err = probeTermStrings(pr.Targets)
	case KindScreen:
		o.Seen, o.Detail, err = probeScreen(pr.Targets)
	case KindPidsBound:
		o.Seen, o.Detail = probePidsBound(int(pr.Limit))
	case KindMemoryBound:
		o.Seen, o.Detail, err = probeMemoryBound(pr.Limit)
	case KindMemoryTouch:
		o.Seen, o.Detail = probeMemoryTouch(pr.Limit)
	case KindTmpfsBound:
		o.Seen, o.Detail = probeTmpfsBound(pr.Targets, pr.Limit)
	case KindCgroupWrite:
		o.Seen, o.Detail, err = probeCgroupWrite()
	case KindNixDaemon:
		o.Seen, o.Detail = r.probeNixDaemon(pr.Targets)
	case KindUDP:
		o.Seen, o.Detail = r.probeUDP(pr.Targets)
	case KindICMP:
		o.Seen, o.Detail = r.probeICMP(pr.Targets)
	case KindHostExec:
		o.Seen, o.Detail, err = probePlantRepo(pr.Targets)
	case KindHiddenRepo:
		o.Seen, o.Detail, err = probeHiddenRepo(pr.Targets)
	case KindWorktreeGitdir:
		o.Seen, o.Detail, err = probeWorktreeGitdir(pr.Targets)
	case KindWorktreeLink:
		o.Seen, o.Detail, err = probeWorktreeLink(pr.Targets)
	case KindMainRebase:
		o.Seen, o.Detail, err = probeMainRebase(pr.Targets)
	case KindDevShellImport:
		o.Seen, o.Detail, err = probeDevShellImport(pr.Targets)
	case KindGitCred:
		o.Seen, o.Detail, err = probeGitCred(pr.Targets) // gitcreds.go
	case KindSystemGitCred:
		o.Seen, o.Detail, err = probeSystemGitCred(pr.Targets) // gitcreds.go
	case KindSSHAgent:
		o.Seen, o.Detail, err = r.probeSSHAgent(pr.Targets) // sshagent.go
	case KindWatchHome:
		o.Seen, o.Detail, err = probeWatchHome(pr.Targets) // watch.go
	case KindOtherProcess:
		o.Seen, o.Detail, err = probeOtherProcess(pr.Targets) // otherproc.go
	case KindSendZerocopy:
		o.Seen, o.Detail, err = probeSendZerocopy() // zerocopy.go
	case KindNetlinkAdmin:
		o.Seen, o.Detail, err = probeNetlinkAdmin() // netlink.go
	case KindLoopbackRename:
		o.Seen, o.Detail, err = r.probeLoopbackRename(pr.Targets) // loopback.go
	default:
		o.Seen, o.Detail, err = r.probePorts(pr) // publish.go; else an unknown kind
	}
	if err != nil {
		o.Err = err.Error()
	}
	return o
}

// probePaths: a target is seen when lstat finds it; the detail says if it is readable too.
func probePaths(paths []string) (bool, string) {
	var seen []string
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		what := "visible"
		switch {
		case fi.IsDir():
			if ents, err := os.ReadDir(p); err == nil {
				what = fmt.Sprintf("readable dir, %d entries", len(ents))
			} else {
				what = "visible dir, unreadable"
			}
		case fi.Mode()&os.ModeSocket != 0:
			what = "socket"
			if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
				c.Close()
				what = "socket, connectable"
			}
		default:
			if f, err := os.Open(p); err == nil {
				n, _ := f.Read(make([]byte, 1))
				f.Close()
				what = "readable"
				if n == 0 && fi.Size() == 0 {
					what = "readable (empty)"
				}
			} else {
				what = "visible, unreadable"
			}
		}
		seen = append(seen, p+": "+what)
	}
	if len(seen) == 0 {
		return false, "absent"
	}
	return true, strings.Join(seen, "; ")
}

func probeEnv(names []string) (bool, string) {
	var present []string
	for _, n := range names {
		if _, ok := os.LookupEnv(n); ok {
			present = append(present, n)
		}
	}
	if len(present) == 0 {
		return false, "absent"
	}
	return true, "present: " + strings.Join(present, " ")
}

// probeEnvScan flags every variable of the sandbox's environment that looks secret and
// was not allowlisted. Names only: a value is never printed.
func probeEnvScan(allowed []string) (bool, string) {
	var bad []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(allowed, k) || isBoxVar(k) {
			continue
		}
		if envaudit.Check(k, v) != "" {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return false, "none"
	}
	slices.Sort(bad)
	return true, "present: " + strings.Join(bad, " ")
}

// isBoxVar: the variables box itself sets from non-secret facts.
func isBoxVar(k string) bool {
	switch k {
	case "HOME", "PATH", "USER", "LOGNAME", "BOX_SANDBOX":
		return true
	}
	return false
}

func (r *runner) probeAbstract(names []string) (bool, string) {
	var reached []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		network := "unix"
		if rest, ok := strings.CutPrefix(n, "seqpacket:"); ok {
			network, n = "unixpacket", rest
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout(network, "@"+n, r.timeout)
			if err == nil {
				c.Close()
				mu.Lock()
				reached = append(reached, "@"+n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(reached) == 0 {
		return false, fmt.Sprintf("none of %d reachable", len(names))
	}
	slices.Sort(reached)
	return true, fmt.Sprintf("%d of %d reachable: %s", len(reached), len(names), strings.Join(reached, " "))
}

// probePIDs: more processes than the sandbox's own, or the drill's outer command line,
// mean the host's PIDs are visible. On a terminal the probe's parent is box's session
// helper (it runs the command as a job: tty_session.go), the sandbox's own beside its
// pid 1: not counted.
func probePIDs(p Plan) (bool, string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false, "", err
	}
	self, parent := os.Getpid(), os.Getppid()
	n := 0
	outer := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if pid != self && err == nil && p.OuterCmdline != "" && cmdline(b) == p.OuterCmdline {
			outer = true
		}
		if pid == parent && err == nil && bytes.HasPrefix(b, []byte(bwrap.SessionPath+"\x00"+bwrap.SessionSubcommand+"\x00")) {
			continue
		}
		n++
	}
	d := fmt.Sprintf("%d processes visible", n)
	if outer {
		d += ", the drill's own outer process among them"
	}
	return n > p.MaxProcs || outer, d, nil
}

// status reads fields of /proc/PID/status.
func status(pid string) (map[string]string, error) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, sc.Err()
}

func probeNoNewPrivs() (bool, string, error) {
	st, err := status("self")
	if err != nil {
		return false, "", err
	}
	v := st["NoNewPrivs"]
	return v != "1", "NoNewPrivs " + v, nil
}

func probeCaps() (bool, string, error) {
	st, err := status("self")
	if err != nil {
		return false, "", err
	}
	var held []string
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if v, err := strconv.ParseUint(st[k], 16, 64); err != nil || v != 0 {
			held = append(held, k+" "+st[k])
		}
	}
	d := "CapEff " + st["CapEff"] + ", CapBnd " + st["CapBnd"]
	if len(held) > 0 {
		return true, strings.Join(held, ", ") + ", CapBnd " + st["CapBnd"], nil
	}
	return false, d, nil
}

// probeSetuid executes a setuid-root binary and reads its effective uid from
// /proc/PID/status before reaping it (a zombie keeps its credentials).
func probeSetuid(targets []string) (bool, string, error) {
	if len(targets) != 1 {
		return false, "", errors.New("setuid probe without a target")
	}
	bin := targets[0]
	fi, err := os.Stat(bin)
	if err != nil {
		return false, "not present inside (" + errName(err) + ")", nil
	}
	cmd := exec.Command(bin, "--version")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return false, "exec refused (" + errName(err) + ")", nil
	}
	st, serr := status(strconv.Itoa(cmd.Process.Pid))
	cmd.Wait()
	if serr != nil {
		return false, "", fmt.Errorf("reading the child's status: %w", serr)
	}
	// The status read must be the child's: under a /proc that is not the sandbox's own,
	// the pid names another process.
	if name := filepath.Base(bin); st["Name"] != name[:min(len(name), 15)] {
		return false, "", fmt.Errorf("/proc/%d is %q, not the child %s: /proc is not this sandbox's", cmd.Process.Pid, st["Name"], bin)
	}
	uids := strings.Fields(st["Uid"])
	if len(uids) < 2 {
		return false, "", fmt.Errorf("child's Uid line %q", st["Uid"])
	}
	euid, _ := strconv.Atoi(uids[1])
	d := fmt.Sprintf("%s (mode %v): euid %d", bin, fi.Mode(), euid)
	return euid == 0 || euid != os.Geteuid(), d, nil
}

// probeUserns tries to start a child in a new user namespace.
func probeUserns() (bool, string) {
	bin, err := exec.LookPath("true")
	if err != nil {
		bin = "/proc/self/exe" // box with no arguments prints its help and exits
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return false, "refused (" + errName(err) + ")"
		}
	}
	return true, "created a user namespace"
}

// probeNixDaemon does what an agent would: connect to the daemon's socket and open a
// session (the worker protocol's handshake: magic 0x6e697863, answered by 0x6478696f).
// A daemon that answers would build and fetch anything for it, on the host's network.
func (r *runner) probeNixDaemon(targets []string) (bool, string) {
	for _, t := range targets {
		c, err := net.DialTimeout("unix", t, r.timeout)
		if err != nil {
			continue
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(r.timeout))
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], 0x6e697863)
		if _, err := c.Write(b[:]); err != nil {
			return true, "connected to " + t
		}
		if _, err := io.ReadFull(c, b[:]); err == nil && binary.LittleEndian.Uint64(b[:]) == 0x6478696f {
			return true, "the nix-daemon at " + t + " answered"
		}
		return true, "connected to " + t
	}
	return false, "unreachable"
}

// probeWrite creates (never overwrites) the target file; the outside removes it if it
// reached the host.
func probeWrite(targets []string) (bool, string) {
	if len(targets) != 1 {
		return false, "no target"
	}
	f, err := os.OpenFile(targets[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, "refused (" + errName(err) + ")"
	}
	f.Write([]byte("box drill\n"))
	f.Close()
	// Left in place: Settle, outside, checks whether it reached the host and removes it.
	return true, "written"
}

// probePlantRepo makes a repository by hand (the sandbox may have no git) at targets[0]
// whose core.fsmonitor, run by any git status, writes targets[1]. Seen = planted; what
// counts is whether the host runs it (Settle).
func probePlantRepo(targets []string) (bool, string, error) {
	if len(targets) != 2 {
		return false, "", errors.New("host-exec probe without its two targets")
	}
	gd := filepath.Join(targets[0], ".git")
	for _, d := range []string{"objects", "refs/heads"} {
		if err := os.MkdirAll(filepath.Join(gd, d), 0o755); err != nil {
			return false, "not planted (" + errName(err) + ")", nil
		}
	}
	files := map[string]string{
		"HEAD":   "ref: refs/heads/main\n",
		"config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"echo ran >" + targets[1] + "; false\"\n",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(gd, n), []byte(c), 0o644); err != nil {
			return false, "not planted (" + errName(err) + ")", nil
		}
	}
	return true, "planted " + gd, nil
}

// probeHTTP: any of targets answering an HTTP GET is seen.
func (r *runner) probeHTTP(targets []string) (bool, string) {
	if len(targets) == 0 {
		return false, "no URL"
	}
	var why []string
	for _, t := range targets {
		seen, detail := r.get(t)
		if seen {
			if len(targets) > 1 {
				detail = t + ": " + detail
			}
			return true, detail
		}
		why = append(why, detail)
	}
	return false, strings.Join(why, "; ")
}

func (r *runner) get(target string) (bool, string) {
	c := &http.Client{
		// No proxy from the environment: the probe is about the sandbox's own reach.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		Timeout:   r.timeout + 2*time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := c.Get(target)
	if err != nil {
		return false, "unreachable (" + errName(err) + ")"
	}
	resp.Body.Close()
	return true, "HTTP " + strconv.Itoa(resp.StatusCode)
}

// probeTCP: a target answers when the connection is made or refused (a refusal is a
// reply from a host: the packet got there). An ICMP rejection, no route or a timeout is
// "unreachable". The sandbox's own addresses (pasta copies the host's) do not count when
// they refuse: that is the sandbox's own kernel answering.
func (r *runner) probeTCP(targets []string) (bool, string) {
	type res struct {
		target string
		seen   bool
		why    string
	}
	results := make([]res, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen, why := r.dial(t)
			results[i] = res{t, seen, why}
		}()
	}
	wg.Wait()
	var reached, other []string
	for _, x := range results {
		if x.seen {
			reached = append(reached, x.target+" "+x.why)
		} else if len(other) < 2 {
			other = append(other, x.target+" "+x.why)
		}
	}
	if len(reached) > 0 {
		return true, "reachable: " + strings.Join(reached, ", ")
	}
	if len(targets) > 2 {
		other = append(other, fmt.Sprintf("(%d targets)", len(targets)))
	}
	return false, "unreachable: " + strings.Join(other, ", ")
}

func (r *runner) dial(target string) (bool, string) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return false, "bad target"
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", target)
	if err == nil {
		defer c.Close()
		if r.plan.Proxied {
			return proxiedReply(c, ctx)
		}
		return true, "(connected)"
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		if r.local[ap.Addr().Unmap()] {
			return false, "(the sandbox's own address)"
		}
		return true, "(refused: a host answered)"
	}
	return false, "(" + errName(err) + ")"
}

// proxiedReply: behind tier allowlist's proxy every connect succeeds locally; the target
// was reached only if it answers. An HTTP request without a name is what a program
// dialling an address sends; any byte back is an answer.
func proxiedReply(c net.Conn, ctx context.Context) (bool, string) {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	b := make([]byte, 1)
	if n, _ := c.Read(b); n > 0 {
		return true, "(answered)"
	}
	return false, "(closed by the proxy)"
}

// probeUDP: a datagram that leaves the sandbox (the send is not refused locally) or is
// answered is seen. Port 53 is DNS, which tier allowlist answers itself: not a target.
func (r *runner) probeUDP(targets []string) (bool, string) {
	var why []string
	for _, t := range targets {
		c, err := net.DialTimeout("udp", t, r.timeout)
		if err != nil {
			why = append(why, t+" ("+errName(err)+")")
			continue
		}
		c.SetDeadline(time.Now().Add(r.timeout))
		_, err = c.Write([]byte("box-drill"))
		if err != nil {
			c.Close()
			why = append(why, t+" ("+errName(err)+")")
			continue
		}
		b := make([]byte, 64)
		n, rerr := c.Read(b)
		c.Close()
		if n > 0 {
			return true, t + " answered"
		}
		if errors.Is(rerr, syscall.ECONNREFUSED) {
			return true, t + " refused it (a host answered)"
		}
		return true, t + " sent (the datagram left the sandbox)"
	}
	return false, "dropped: " + strings.Join(why, ", ")
}

// probeICMP: an echo request that leaves (unprivileged ICMP socket, else raw) or is
// answered is seen.
func (r *runner) probeICMP(targets []string) (bool, string) {
	var why []string
	for _, t := range targets {
		ip := net.ParseIP(t)
		for _, network := range []string{"udp4", "ip4:icmp"} {
			c, err := icmp.ListenPacket(network, "0.0.0.0")
			if err != nil {
				why = append(why, network+" socket: "+errName(err))
				continue
			}
			msg, _ := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 0x626f, Seq: 1, Data: []byte("box-drill")}}).Marshal(nil)
			var dst net.Addr = &net.IPAddr{IP: ip}
			if network == "udp4" {
				dst = &net.UDPAddr{IP: ip}
			}
			c.SetDeadline(time.Now().Add(r.timeout))
			if _, err := c.WriteTo(msg, dst); err != nil {
				c.Close()
				why = append(why, network+" send: "+errName(err))
				continue
			}
			b := make([]byte, 512)
			n, _, err := c.ReadFrom(b)
			c.Close()
			if err == nil && n > 0 {
				return true, t + " answered the echo"
			}
			return true, t + " echo sent (it left the sandbox)"
		}
	}
	return false, "dropped: " + strings.Join(why, ", ")
}

// probeGateway probes the sandbox's own default gateway: with user-mode networking it is
// where a host loopback mapping would answer.
func (r *runner) probeGateway(ports []int) (bool, string) {
	gws := gateways("/proc/net/route")
	if len(gws) == 0 {
		return false, "no default route"
	}
	var ts []string
	for _, g := range gws {
		for _, p := range ports {
			ts = append(ts, netip.AddrPortFrom(g, uint16(p)).String())
		}
	}
	return r.probeTCP(ts)
}

func localAddrs() map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				m[ip.Unmap()] = true
			}
		}
	}
	return m
}

// errName shortens an error to its errno name when it has one.
func errName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if s := shortErrno(errno); s != "" {
			return s
		}
		return errno.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "DNS: " + dnsErr.Err
	}
	s := err.Error()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// shortErrno is the errno names errName shortens to ("" for another): a switch, not a
// map built at every start of box (issue 24).
func shortErrno(e syscall.Errno) string {
	switch e {
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EROFS:
		return "EROFS"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.ENETUNREACH:
		return "ENETUNREACH"
	case syscall.EHOSTUNREACH:
		return "EHOSTUNREACH"
	case syscall.ECONNREFUSED:
		return "ECONNREFUSED"
	case syscall.ETIMEDOUT:
		return "ETIMEDOUT"
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.EAGAIN:
		return "EAGAIN"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.EADDRNOTAVAIL:
		return "EADDRNOTAVAIL"
	case syscall.ENOTDIR:
		return "ENOTDIR"
	}
	return ""
}

func fileUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
