package inet

// Real tests of the allowlist tier: in the hermetic lab, as the unprivileged user, a real
// bwrap (--unshare-net, no uplink) is AttachAllow'ed and released, and a probe inside
// tries every way out with curl, git, its own Go code (which knows nothing of proxies),
// raw UDP and ICMP. Then the launcher closes the proxy and the probe tries again.
//   - BOXINET_ROLE=allowlaunch  the launcher (what `box run --network allowlist` does)
//   - BOXINET_ROLE=allowprobe   the sandboxed command

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"github.com/heavy-duty/box/policy"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// testAllow is the test's allowlist: allowed.test and its subdomains, the two rebinding
// names, and nothing else (example.test and denied.test are not allowed).
var testAllow = []string{"allowed.test", "*.allowed.test", lab.LANName, lab.MetadataName}

type allowReport struct {
	Err    string            `json:"err,omitempty"`
	Before map[string]string `json:"before,omitempty"` // probes with the proxy up
	After  map[string]string `json:"after,omitempty"`  // probes after the proxy closed
	Log    string            `json:"log,omitempty"`
	// ChildAlive: the sandbox's pid 1 outlived a failed AttachAllow.
	ChildAlive bool   `json:"child_alive,omitempty"`
	Sum        string `json:"summary,omitempty"`
}

func allowLaunch() int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var rep allowReport
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	fail := func(err error) int { rep.Err = err.Error(); return 3 }

	ps, err := policy.ParseAllow(testAllow)
	if err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "boxallow-launch-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	resolv := filepath.Join(dir, "resolv.conf")
	os.WriteFile(resolv, []byte(AllowResolvConf), 0o644)
	logPath := filepath.Join(dir, "network.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	hostAddrs, err := HostAddrs()
	if err != nil {
		return fail(err)
	}
	exe, _ := os.Executable()
	labDir := os.Getenv("BOXLAB_DIR")
	argv := bwrapArgv(exe, resolv, "/probe")
	argv = append(argv[:len(argv)-2:len(argv)-2], "--ro-bind", labDir, labDir, "--", "/probe")

	infoR, infoW, _ := os.Pipe()
	blockR, blockW, _ := os.Pipe()
	cmd := exec.CommandContext(ctx, "bwrap", argv...)
	cmd.ExtraFiles = []*os.File{infoW, blockR}
	cmd.Env = []string{"BOXINET_ROLE=allowprobe", "PATH=/usr/bin:/bin", "HOME=/tmp", "BOXLAB_CA=" + os.Getenv("BOXLAB_CA")}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	infoW.Close()
	blockR.Close()
	defer blockW.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil {
		cmd.Process.Kill()
		return fail(fmt.Errorf("info fd: %v: %s", err, stderr.String()))
	}
	lg := NewLog(logf)
	var filterCmd []string
	if h := os.Getenv("BOXALLOW_HELPER"); h != "" {
		filterCmd = []string{h} // a setup helper that fails: the sandbox must never run
	}
	sess, err := AttachAllow(ctx, info.ChildPid, AllowOptions{Allow: NewAllowlist(ps), Log: lg, HostAddrs: hostAddrs, FilterCommand: filterCmd})
	if err != nil {
		rep.ChildAlive = alive(info.ChildPid)
		cmd.Process.Kill()
		cmd.Wait()
		return fail(err)
	}
	blockW.Write([]byte{1})
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	read := func(into *map[string]string) error {
		if !lines.Scan() {
			return fmt.Errorf("probe ended early: %v: %s", lines.Err(), stderr.String())
		}
		return json.Unmarshal(lines.Bytes(), into)
	}
	if err := read(&rep.Before); err != nil {
		sess.Close()
		cmd.Process.Kill()
		return fail(err)
	}
	// The proxy goes away (as when box dies: it held the only descriptors of the sockets).
	sess.Close()
	io.WriteString(stdin, "go\n")
	if err := read(&rep.After); err != nil {
		cmd.Process.Kill()
		return fail(err)
	}
	stdin.Close()
	cmd.Wait()
	logf.Close()
	b, _ := os.ReadFile(logPath)
	rep.Log, rep.Sum = string(b), lg.Summary()
	return 0
}

// allowProbe is the sandboxed command: one JSON line of results, then (after a line on
// stdin) another, taken once the proxy is gone.
func allowProbe() int {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(os.Getenv("BOXLAB_CA")); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	// Proxy: nil. This program knows nothing of proxies; whatever reaches the internet
	// does so because the netns sends it to box.
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second} // a bound, not a measure: refusals are immediate
	get := func(url, host string) string {
		req, _ := http.NewRequest("GET", url, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := client.Do(req)
		if err != nil {
			return "ERR " + err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	run := func(name string, args ...string) string {
		c := exec.Command(name, args...)
		c.Env = append(os.Environ(), "GIT_SSL_CAINFO="+os.Getenv("BOXLAB_CA"), "GIT_TERMINAL_PROMPT=0")
		out, err := c.CombinedOutput()
		if err != nil {
			return "ERR " + err.Error() + ": " + strings.TrimSpace(string(out))
		}
		return string(out)
	}
	ca := os.Getenv("BOXLAB_CA")
	res := map[string]string{}
	all := func(suffix string) {
		res["go-https-allowed"+suffix] = get("https://allowed.test/", "")
		res["go-http-allowed"+suffix] = get("http://allowed.test/", "")
		res["go-https-wildcard"+suffix] = get("https://api.allowed.test/", "")
		res["go-https-denied"+suffix] = get("https://denied.test/", "")
		res["go-http-unlisted"+suffix] = get("http://"+lab.InternetName+"/", "")
		res["direct-ip"+suffix] = get(fmt.Sprintf("http://%s/", lab.Internet), "")
		res["direct-ip-https"+suffix] = tlsTo(lab.Internet.String()+":443", "", pool)
		res["port-denied"+suffix] = get("http://allowed.test:8080/", "")
		res["rebind-lan"+suffix] = get("http://"+lab.LANName+"/", "")
		res["rebind-metadata"+suffix] = get("http://"+lab.MetadataName+"/", "")
		res["curl-allowed"+suffix] = run("curl", "-sS", "--max-time", "20", "--cacert", ca, "https://allowed.test/")
		res["curl-denied"+suffix] = run("curl", "-sS", "--max-time", "20", "--cacert", ca, "https://denied.test/")
		res["udp-echo"+suffix] = udpEcho(lab.Internet.String() + ":7")
		res["icmp"+suffix] = ping(lab.Internet.String())
		res["ipv6-out"+suffix] = get("http://[2001:db8::10]/", "allowed.test")
	}
	all("")
	// A name not allowed, smuggled: the allowed name's address, the other name's SNI or
	// Host header.
	if addrs, err := net.LookupHost("allowed.test"); err == nil && len(addrs) > 0 {
		res["sni-denied"] = tlsTo(addrs[0]+":443", "denied.test", pool)
		res["host-denied"] = get("http://"+addrs[0]+"/", "denied.test")
		res["allowed-addr"] = addrs[0]
	} else {
		res["sni-denied"] = fmt.Sprintf("ERR lookup: %v", err)
	}
	// DNS straight to the lab's resolver: box answers it (udp/53 is redirected), and does
	// not know example.test.
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", lab.Internet.String()+":53")
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	a, err := r.LookupHost(ctx, lab.InternetName)
	cancel()
	res["dns-direct-unlisted"] = fmt.Sprint(a, err)
	res["git-allowed"] = run("git", "clone", "-q", "https://allowed.test/repo.git", "/tmp/r1")
	if b, err := os.ReadFile("/tmp/r1/README"); err == nil {
		res["git-allowed"] = string(b)
	}
	res["git-denied"] = run("git", "clone", "-q", "https://denied.test/repo.git", "/tmp/r2")
	res["tamper-self"] = tamperResult()
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			res["capeff"] = strings.TrimSpace(v)
		}
	}
	json.NewEncoder(os.Stdout).Encode(res)

	bufio.NewReader(os.Stdin).ReadString('\n')
	res = map[string]string{}
	all("")
	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
	a, err = net.DefaultResolver.LookupHost(ctx, "allowed.test")
	cancel()
	res["dns-allowed"] = fmt.Sprint(a, err)
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func tlsTo(addr, sni string, pool *x509.CertPool) string {
	d := &net.Dialer{Timeout: 20 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: sni, RootCAs: pool, InsecureSkipVerify: sni == ""})
	if err != nil {
		return "ERR " + err.Error()
	}
	defer c.Close()
	return "connected"
}

func udpEcho(addr string) string {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return "ERR " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("boxlab-echo")); err != nil {
		return "ERR " + err.Error()
	}
	b := make([]byte, 64)
	n, err := c.Read(b)
	if err != nil {
		return "ERR " + err.Error()
	}
	return "reply " + string(b[:n])
}

// ping sends an ICMP echo with an unprivileged ICMP socket, then a raw one.
func ping(addr string) string {
	var errs []string
	for _, network := range []string{"udp4", "ip4:icmp"} {
		c, err := icmp.ListenPacket(network, "0.0.0.0")
		if err != nil {
			errs = append(errs, network+": "+err.Error())
			continue
		}
		msg, _ := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 7, Seq: 1, Data: []byte("box")}}).Marshal(nil)
		var dst net.Addr = &net.UDPAddr{IP: net.ParseIP(addr)}
		if network != "udp4" {
			dst = &net.IPAddr{IP: net.ParseIP(addr)}
		}
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.WriteTo(msg, dst); err != nil {
			errs = append(errs, network+": "+err.Error())
			c.Close()
			continue
		}
		b := make([]byte, 512)
		n, _, err := c.ReadFrom(b)
		c.Close()
		if err != nil {
			errs = append(errs, network+": "+err.Error())
			continue
		}
		if m, err := icmp.ParseMessage(1, b[:n]); err == nil && m.Type == ipv4.ICMPTypeEchoReply {
			return "reply"
		}
		errs = append(errs, network+": no echo reply")
	}
	return "ERR " + strings.Join(errs, "; ")
}

func TestAllowlistTierReal(t *testing.T) {
	requireReal(t)
	l := lab.New(t)
	testenv.RequireTool(t, "git")
	if err := l.GitRepo(context.Background(), "repo"); err != nil {
		t.Fatal(err)
	}
	exe := userExe(t)
	uid, gid := testenv.User(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := l.UserCommand(ctx, uid, gid, exe)
	cmd.Env = append(cmd.Env, "BOXINET_ROLE=allowlaunch", "BOXLAB_DIR="+l.Dir, "BOXLAB_CA="+l.CAFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep allowReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil || err != nil || rep.Err != "" {
		t.Fatalf("launcher: %v %v %s\nstdout: %s\nstderr: %s", err, jerr, rep.Err, out, stderr.String())
	}
	logRows := func(m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("  %-22s %q", k, m[k])
		}
	}
	t.Log("with the proxy:")
	logRows(rep.Before)
	t.Log("after the proxy closed:")
	logRows(rep.After)
	t.Logf("log:\n%s", rep.Log)
	t.Logf("summary: %s", rep.Sum)

	b := rep.Before
	for _, k := range []string{"go-https-allowed", "go-http-allowed", "go-https-wildcard", "curl-allowed"} {
		if b[k] != lab.InternetBody {
			t.Errorf("%s: the allowed name does not work: %q", k, b[k])
		}
	}
	if b["git-allowed"] != lab.RepoBody {
		t.Errorf("git over HTTPS to the allowed name: %q", b["git-allowed"])
	}
	for _, k := range []string{"go-https-denied", "go-http-unlisted", "direct-ip", "direct-ip-https", "port-denied",
		"rebind-lan", "rebind-metadata", "curl-denied", "udp-echo", "icmp", "ipv6-out", "sni-denied", "host-denied", "git-denied", "tamper-self"} {
		if !strings.HasPrefix(b[k], "ERR") {
			t.Errorf("BREACH %s: %q", k, b[k])
		}
	}
	for _, secret := range []string{lab.LANBody, lab.MetadataBody} {
		for k, v := range b {
			if strings.Contains(v, strings.TrimSpace(secret)) {
				t.Errorf("BREACH %s read %q", k, v)
			}
		}
	}
	if strings.Contains(b["dns-direct-unlisted"], lab.Internet.String()) {
		t.Errorf("DNS to the lab's resolver answered: %s", b["dns-direct-unlisted"])
	}
	if b["capeff"] != "0000000000000000" {
		t.Errorf("the sandboxed command holds capabilities: %s", b["capeff"])
	}
	for k, v := range rep.After {
		if !strings.HasPrefix(v, "ERR") && !strings.Contains(v, "no such host") && !strings.Contains(v, "connection refused") {
			t.Errorf("after the proxy closed, %s still works: %q", k, v)
		}
	}
	// Each refusal is in the log, with its name or address and port.
	for _, want := range []string{
		"refused-dns denied.test - not in the allowlist",
		"refused-dns " + lab.InternetName + " - not in the allowlist",
		"refused - " + lab.Internet.String() + ":80 no name",
		"refused denied.test " + b["allowed-addr"] + ":443 not in the allowlist",
		"refused denied.test " + b["allowed-addr"] + ":80 not in the allowlist",
		"refused allowed.test " + b["allowed-addr"] + ":8080 port 8080 not allowed",
		"refused " + lab.LANName + " ", "resolves to a blocked address: " + lab.LANHost.String(),
		"refused " + lab.MetadataName + " ", "resolves to a blocked address: " + lab.Metadata.String(),
	} {
		if !strings.Contains(rep.Log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if !strings.Contains(rep.Sum, "denied.test (") {
		t.Errorf("summary lacks denied.test: %q", rep.Sum)
	}
}

// Fail closed: when the setup helper fails, AttachAllow kills the sandbox before its
// command runs.
func TestAttachAllowFailsClosed(t *testing.T) {
	requireReal(t)
	l := lab.New(t)
	exe := userExe(t)
	uid, gid := testenv.User(t)
	for _, helper := range []string{"/bin/false", "/nonexistent/box"} {
		before := nsPids(t, l)
		cmd := l.UserCommand(context.Background(), uid, gid, exe)
		cmd.Env = append(cmd.Env, "BOXINET_ROLE=allowlaunch", "BOXLAB_DIR="+l.Dir, "BOXLAB_CA="+l.CAFile, "BOXALLOW_HELPER="+helper)
		out, err := cmd.Output()
		var rep allowReport
		json.Unmarshal(out, &rep)
		if err == nil || rep.Err == "" || rep.Before != nil {
			t.Fatalf("%s: the sandbox ran: %v %+v", helper, err, rep)
		}
		if rep.ChildAlive {
			t.Errorf("%s: the sandbox outlived the failed setup", helper)
		}
		t.Logf("%s: %s", helper, rep.Err)
		if after := settledPids(t, l, before); after != before {
			t.Errorf("%s: processes left: before %q after %q", helper, before, after)
		}
	}
}
