package inet

// Real tests: in the hermetic lab, as an unprivileged user in the lab's host namespace,
// a real bwrap is launched, Attach'ed, released, and a probe inside it reports what it
// can reach. The test binary plays every role by re-executing itself:
//   - `TESTBIN __inet-filter ...`  the hidden subcommand (what `box __inet-filter` does)
//   - BOXINET_ROLE=launch          the launcher (what `box run --network internet` does)
//   - BOXINET_ROLE=probe           the sandboxed command
//   - BOXINET_ROLE=tamper          the probe's child in a fresh user namespace of its own

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == FilterSubcommand {
		os.Exit(FilterMain(os.Args[2:]))
	}
	switch os.Getenv("BOXINET_ROLE") {
	case "launch":
		os.Exit(launch())
	case "probe":
		os.Exit(probe())
	case "tamper":
		os.Exit(tamper())
	case "bench":
		os.Exit(benchRole())
	case "allowlaunch":
		os.Exit(allowLaunch())
	case "allowprobe":
		os.Exit(allowProbe())
	case "netnsfd":
		os.Exit(netnsFd(os.Args[1]))
	case "check", "check-tun":
		os.Exit(checkRole(os.Getenv("BOXINET_ROLE")))
	case "checkallow":
		if err := CheckAllowlist(nil); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		// A helper that cannot run is reported, not taken for success.
		if err := CheckAllowlist([]string{"/nonexistent/box"}); err == nil {
			fmt.Println("a missing helper passed the check")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// launchReport is what the launcher prints on stdout as JSON.
type launchReport struct {
	AttachErr  string            `json:"attach_err,omitempty"`
	HelperPid  int               `json:"helper_pid,omitempty"`
	Probes     map[string]string `json:"probes,omitempty"`
	WithNetNS  string            `json:"with_netns_fd_err,omitempty"` // google/nftables from outside
	AttachMs   float64           `json:"attach_ms"`
	TotalMs    float64           `json:"total_ms"`
	BwrapState string            `json:"bwrap_state,omitempty"`
	ChildAlive bool              `json:"child_alive,omitempty"` // sandbox pid 1 after a failed Attach
}

// bwrapArgv is a minimal sandbox, as the bwrap backend builds it for tier internet:
// its own netns (--unshare-all), --dev (uid 0 in the outer userns for the filter helper),
// the tier's resolv.conf, and the probe binary.
func bwrapArgv(exe, resolv string, cmd ...string) []string {
	argv := []string{
		"--ro-bind", "/usr", "/usr",
		"--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", "/etc", "/etc",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--unshare-all", "--die-with-parent", "--new-session",
		"--info-fd", "3", "--block-fd", "4",
	}
	if resolv != "" {
		argv = append(argv, "--ro-bind", resolv, "/etc/resolv.conf")
	}
	if exe != "" {
		argv = append(argv, "--ro-bind", exe, "/probe")
	}
	return append(append(argv, "--"), cmd...)
}

// startBwrap starts bwrap blocked on its block fd and returns it with the child pid and
// the write end of the block fd.
func startBwrap(ctx context.Context, argv []string, env []string) (*exec.Cmd, int, *os.File, io.Writer, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, 0, nil, nil, err
	}
	defer infoR.Close()
	blockR, blockW, err := os.Pipe()
	if err != nil {
		return nil, 0, nil, nil, err
	}
	cmd := exec.CommandContext(ctx, "bwrap", argv...)
	cmd.ExtraFiles = []*os.File{infoW, blockR}
	cmd.Env = env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		infoW.Close()
		blockR.Close()
		blockW.Close()
		return nil, 0, nil, nil, err
	}
	infoW.Close()
	blockR.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		blockW.Close()
		return nil, 0, nil, nil, fmt.Errorf("bwrap info fd: %w: %s", err, out.String())
	}
	return cmd, info.ChildPid, blockW, &out, nil
}

// launch is the launcher role: bwrap + Attach + release, then the probe's JSON.
func launch() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep := launchReport{}
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	start := time.Now()
	opts := Options{Helper: Helper(os.Getenv("BOXINET_HELPER")), HelperPath: os.Getenv("BOXINET_HELPER_PATH")}
	opts, err := opts.Resolve()
	if err != nil {
		rep.AttachErr = err.Error()
		return 3
	}
	if opts.HostAddrs, err = HostAddrs(); err != nil {
		rep.AttachErr = err.Error()
		return 3
	}
	dir, err := os.MkdirTemp("", "boxinet-launch-")
	if err != nil {
		rep.AttachErr = err.Error()
		return 3
	}
	defer os.RemoveAll(dir)
	resolv := filepath.Join(dir, "resolv.conf")
	os.WriteFile(resolv, []byte(ResolvConf(opts.Helper)), 0o644)
	exe, _ := os.Executable()
	argv := bwrapArgv(exe, resolv, "/probe")
	if os.Getenv("BOXINET_NODEV") == "1" {
		for i, a := range argv {
			if a == "--dev" {
				argv = append(argv[:i:i], argv[i+2:]...)
				break
			}
		}
	}
	bw, pid, block, out, err := startBwrap(ctx, argv,
		[]string{"BOXINET_ROLE=probe", "PATH=/usr/bin:/bin:/usr/sbin:/sbin"})
	if err != nil {
		rep.AttachErr = err.Error()
		return 3
	}
	defer block.Close()

	// google/nftables from outside the namespaces: the unprivileged user cannot, which is
	// why the filter helper exists (recorded, asserted by the test). In a child process:
	// the library runs setns on a locked thread that it discards on failure, and bwrap's
	// --die-with-parent would fire if that thread happened to be the one that forked it.
	nsfd := exec.Command(exe, strconv.Itoa(pid))
	nsfd.Env = []string{"BOXINET_ROLE=netnsfd"}
	if out, err := nsfd.CombinedOutput(); err != nil {
		rep.WithNetNS = strings.TrimSpace(string(out))
	}

	actx := ctx
	if d, err := time.ParseDuration(os.Getenv("BOXINET_TIMEOUT")); err == nil {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	t0 := time.Now()
	sess, err := Attach(actx, pid, opts)
	rep.AttachMs = ms(time.Since(t0))
	if err != nil {
		// Fail closed: kill the sandbox and bwrap, never release it (Attach already
		// killed the sandbox's pid 1; a blocked child would run at block-fd EOF).
		syscall.Kill(pid, syscall.SIGKILL)
		bw.Process.Kill()
		bw.Wait()
		rep.AttachErr = err.Error()
		rep.ChildAlive = alive(pid)
		return 3
	}
	defer sess.Close()
	rep.HelperPid = sess.HelperPid
	block.Write([]byte{1})
	err = bw.Wait()
	rep.TotalMs = ms(time.Since(start))
	rep.BwrapState = bw.ProcessState.String()
	text := out.(fmt.Stringer).String()
	if i := strings.Index(text, "{"); i >= 0 {
		json.Unmarshal([]byte(text[i:]), &rep.Probes)
	}
	if rep.Probes == nil {
		rep.AttachErr = fmt.Sprintf("no probe output (%v): %s", err, text)
		return 3
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// probe is the sandboxed command: it reports what it reaches, as JSON.
func probe() int {
	res := map[string]string{}
	get := func(name, url string) {
		c := &http.Client{Timeout: 3 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			res[name] = "ERR " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res[name] = string(b)
	}
	probeAll := func(suffix string) {
		get("inet-name"+suffix, "http://"+lab.InternetName+"/")
		get("inet-ip"+suffix, fmt.Sprintf("http://%s/", lab.Internet))
		get("lan"+suffix, fmt.Sprintf("http://%s/", lab.LANHost))
		get("metadata"+suffix, fmt.Sprintf("http://%s/", lab.Metadata))
		get("host-public"+suffix, fmt.Sprintf("http://%s:%d/", lab.HostPublic, lab.HostPort))
		get("host-private"+suffix, fmt.Sprintf("http://%s:%d/", lab.HostPrivate, lab.HostPort))
		get("host-loopback"+suffix, fmt.Sprintf("http://127.0.0.1:%d/", lab.HostPort))
		get("slirp-host"+suffix, fmt.Sprintf("http://10.0.2.2:%d/", lab.HostPort))
		get("pasta-resolver"+suffix, fmt.Sprintf("http://%s:%d/", PastaResolver, lab.HostPort))
		get("slirp-resolver"+suffix, fmt.Sprintf("http://%s:%d/", SlirpResolver, lab.HostPort))
		get("router"+suffix, fmt.Sprintf("http://%s:%d/", lab.RouterLAN, lab.HostPort))
		get("host-v6"+suffix, fmt.Sprintf("http://[::1]:%d/", lab.HostPort))
	}
	probeAll("")
	if c, err := net.Dial("unix", "@"+lab.HostAbstract); err != nil {
		res["host-abstract"] = "ERR " + err.Error()
	} else {
		b, _ := io.ReadAll(c)
		res["host-abstract"] = string(b)
	}
	if out, err := exec.Command("curl", "-s", "--max-time", "5", "http://"+lab.InternetName+"/").CombinedOutput(); err != nil {
		res["curl-inet-name"] = "ERR " + err.Error()
	} else {
		res["curl-inet-name"] = string(out)
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "CapEff:") {
			res["capeff"] = strings.TrimSpace(strings.TrimPrefix(l, "CapEff:"))
		}
	}
	// Tampering: here, with nft, and as root of a fresh user namespace of our own.
	res["tamper-self"] = tamperResult()
	if out, err := exec.Command("nft", "flush", "ruleset").CombinedOutput(); err != nil {
		res["tamper-nft"] = "ERR " + strings.TrimSpace(string(out))
	} else {
		res["tamper-nft"] = "flushed"
	}
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = []string{"BOXINET_ROLE=tamper"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	res["tamper-userns"] = strings.TrimSpace(string(out))
	if err != nil && len(out) == 0 {
		res["tamper-userns"] = "ERR " + err.Error()
	}
	// Whatever the tampering did, the filter must still hold.
	probeAll("-after")
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// netnsFd tries google/nftables WithNetNSFd on the sandbox of pid from outside.
func netnsFd(pid string) int {
	f, err := os.Open("/proc/" + pid + "/ns/net")
	if err != nil {
		fmt.Print(err)
		return 1
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err == nil {
		c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "probe"})
		err = c.Flush()
	}
	if err != nil {
		fmt.Print(err)
		return 1
	}
	return 0
}

func tamper() int {
	fmt.Print(tamperResult())
	return 0
}

// tamperResult tries to delete the filter's table in the current netns.
func tamperResult() string {
	c, err := nftables.New()
	if err != nil {
		return "ERR " + err.Error()
	}
	c.DelTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: TableName})
	if err := c.Flush(); err != nil {
		return "ERR " + err.Error()
	}
	return "deleted"
}

// runLauncher runs the launcher role as the unprivileged user in the lab's host netns.
func runLauncher(t *testing.T, l *lab.Lab, exe string, env ...string) (launchReport, string, error) {
	t.Helper()
	uid, gid := testenv.User(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := l.UserCommand(ctx, uid, gid, exe)
	cmd.Env = append(cmd.Env, append([]string{"BOXINET_ROLE=launch"}, env...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep launchReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("launcher output: %v (%v)\nstdout: %s\nstderr: %s", jerr, err, out, stderr.String())
	}
	return rep, stderr.String(), err
}

// userExe copies the test binary where the unprivileged user can run it.
func userExe(t testing.TB) string {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "boxinet-exe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "inet.test")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func requireReal(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "bwrap", "pasta", "slirp4netns", "curl", "nft") {
		testenv.RequireTool(t, tool)
	}
}

func TestInternetTierReal(t *testing.T) {
	requireReal(t)
	l := lab.New(t)
	exe := userExe(t)
	for _, h := range []Helper{Pasta, Slirp4netns} {
		t.Run(string(h), func(t *testing.T) {
			rep, stderr, err := runLauncher(t, l, exe, "BOXINET_HELPER="+string(h))
			if err != nil || rep.AttachErr != "" {
				t.Fatalf("launch: %v: %s\nstderr: %s", err, rep.AttachErr, stderr)
			}
			t.Logf("%s: attach %.1f ms, total %.1f ms", h, rep.AttachMs, rep.TotalMs)
			keys := make([]string, 0, len(rep.Probes))
			for k := range rep.Probes {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t.Logf("  %-22s %q", k, rep.Probes[k])
			}
			for _, k := range []string{"inet-name", "inet-ip", "curl-inet-name", "inet-name-after", "inet-ip-after"} {
				if rep.Probes[k] != lab.InternetBody {
					t.Errorf("%s: internet unreachable: %q", k, rep.Probes[k])
				}
			}
			secrets := []string{lab.LANBody, lab.HostBody, lab.MetadataBody, lab.HostAbstractMsg}
			for k, v := range rep.Probes {
				for _, s := range secrets {
					if strings.Contains(v, strings.TrimSpace(s)) {
						t.Errorf("BREACH %s read %q", k, v)
					}
				}
				if strings.HasPrefix(k, "tamper") && !strings.HasPrefix(v, "ERR") {
					t.Errorf("BREACH %s: the sandbox changed the filter: %q", k, v)
				}
			}
			for _, k := range []string{"lan", "metadata", "host-public", "slirp-host", "pasta-resolver", "slirp-resolver", "router", "host-abstract", "host-v6"} {
				if !strings.HasPrefix(rep.Probes[k], "ERR") {
					t.Errorf("%s: not an error: %q", k, rep.Probes[k])
				}
			}
			if rep.Probes["capeff"] != "0000000000000000" {
				t.Errorf("sandboxed command holds capabilities: %s", rep.Probes["capeff"])
			}
			if rep.WithNetNS == "" {
				t.Errorf("google/nftables WithNetNSFd worked for the unprivileged user: the helper is unneeded?")
			} else {
				t.Logf("WithNetNSFd as the user, as expected: %s", rep.WithNetNS)
			}
			if rep.HelperPid == 0 || alive(rep.HelperPid) {
				t.Errorf("helper pid %d left running after Close", rep.HelperPid)
			}
			if !strings.Contains(rep.BwrapState, "exit status 0") {
				t.Errorf("bwrap: %s", rep.BwrapState)
			}
		})
	}
}

// Fail closed: a helper that cannot start, or starts and dies, makes Attach fail, the
// sandboxed command never runs and nothing is left running.
func TestAttachFailsClosed(t *testing.T) {
	requireReal(t)
	l := lab.New(t)
	exe := userExe(t)
	for _, c := range []struct{ name, helper, path, want string }{
		{"missing", "pasta", "/nonexistent/pasta", "start /nonexistent/pasta"},
		{"dies", "slirp4netns", "/bin/false", "exited during setup"},
		{"hangs", "pasta", "HANG", "did not configure the sandbox link"},
		// Without --dev bwrap does not map the user to uid 0 in its outer user namespace:
		// the filter cannot be installed, and the hint says what to pass.
		{"nodev", "pasta", "", "pass --dev to bwrap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "HANG" {
				// A helper that starts and never configures anything.
				path = filepath.Join(filepath.Dir(exe), "hang.sh")
				if err := os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"BOXINET_HELPER=" + c.helper, "BOXINET_HELPER_PATH=" + path, "BOXINET_TIMEOUT=2s"}
			if c.name == "nodev" {
				env = append(env, "BOXINET_NODEV=1")
			}
			before := nsPids(t, l)
			rep, stderr, err := runLauncher(t, l, exe, env...)
			if err == nil || rep.AttachErr == "" || rep.Probes != nil {
				t.Fatalf("attach with %s succeeded: %+v %s", c.path, rep, stderr)
			}
			if rep.ChildAlive {
				t.Errorf("the sandbox outlived a failed Attach")
			}
			if !strings.Contains(rep.AttachErr, c.want) {
				t.Errorf("error %q lacks %q", rep.AttachErr, c.want)
			}
			t.Logf("error: %s", rep.AttachErr)
			after := settledPids(t, l, before)
			if after != before {
				ps, _ := exec.Command("ps", "-o", "pid,ppid,user,stat,args", "-p", strings.ReplaceAll(after, " ", ",")).CombinedOutput()
				t.Errorf("processes left in the host netns: before %q after %q\n%s", before, after, ps)
			}
		})
	}
}

// settledPids is nsPids once it is back to before, or after a second: a killed process
// takes a moment to go.
func settledPids(t *testing.T, l *lab.Lab, before string) string {
	t.Helper()
	after := nsPids(t, l)
	for i := 0; i < 50 && after != before; i++ {
		time.Sleep(20 * time.Millisecond)
		after = nsPids(t, l)
	}
	return after
}

// nsPids lists the processes in the lab's host netns (the lab's own are not processes).
func nsPids(t *testing.T, l *lab.Lab) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", l.NSName(lab.RoleHost)).Output()
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, p := range strings.Fields(string(out)) {
		if n, _ := strconv.Atoi(p); n != os.Getpid() {
			pids = append(pids, p)
		}
	}
	return strings.Join(pids, " ")
}

// alive reports whether pid still runs (a zombie does not), waiting up to a second for
// a killed process to go.
func alive(pid int) bool {
	for i := 0; i < 50; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		// state is the field after "(comm)".
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Check, run by the unprivileged user in the lab, finds nothing wrong (the test binary
// dispatches the filter subcommand), and reports the 0600 tun of the machine.
func TestCheckReal(t *testing.T) {
	requireReal(t)
	l := lab.New(t)
	exe := userExe(t)
	uid, gid := testenv.User(t)
	ctx := context.Background()
	cmd := l.UserCommand(ctx, uid, gid, exe)
	cmd.Env = append(cmd.Env, "BOXINET_ROLE=check")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("check as user: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	// The allowlist tier's check: its real setup, as the user; a helper that cannot run
	// fails it (checkallow).
	cmd = l.UserCommand(ctx, uid, gid, exe)
	cmd.Env = append(cmd.Env, "BOXINET_ROLE=checkallow")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("allowlist check as user: %v\n%s", err, out)
	}
	// Outside the lab's private mounts, as the user, the machine's 0600 tun is reported.
	if fi, err := os.Stat("/dev/net/tun"); err == nil && fi.Mode().Perm()&0o006 != 0o006 {
		cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", exe)
		cmd.Env = []string{"BOXINET_ROLE=check-tun", "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("tun check as user: %v\n%s", err, out)
		}
	}
}

// checkRole is TestCheckReal's payload, run as the user: "check" wants no problem,
// "check-tun" wants the tun problem with its chmod fix.
func checkRole(role string) int {
	ps := Check(Options{})
	for _, p := range ps {
		fmt.Printf("problem: %v; fix: %s\n", p, p.Fix)
	}
	switch role {
	case "check":
		if len(ps) == 0 {
			return 0
		}
	case "check-tun":
		for _, p := range ps {
			if p.What == "/dev/net/tun" && strings.Contains(p.Fix, "chmod 0666") {
				return 0
			}
		}
	}
	return 1
}
