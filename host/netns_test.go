package host

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/google/nftables"
	netlab "github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// requireKernel gates a test that needs root, a real kernel and the tools used to build
// and inspect its namespaces.
func requireKernel(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t)
	for _, tool := range []string{"nft", "ip", "nsenter"} {
		testenv.RequireTool(t, tool)
	}
}

// newNS makes a network namespace that lives until the test ends. Nothing the test
// does in it can reach the machine's own network or ruleset.
func newNS(t *testing.T) *os.File {
	t.Helper()
	f, err := NewNetNS()
	if err != nil {
		testenv.Skip(t, "cannot create a network namespace: "+err.Error())
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// nsPath names a namespace handle for tools (nsenter --net=, ip link set netns).
func nsPath(ns *os.File) string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), ns.Fd()) }

// nsRun runs a command inside ns and returns its stdout; failure fails the test.
func nsRun(t *testing.T, ns *os.File, args ...string) string {
	t.Helper()
	out, err := nsExec(ns, args...)
	if err != nil {
		t.Fatalf("in netns: %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func nsExec(ns *os.File, args ...string) (string, error) {
	cmd := exec.Command("nsenter", append([]string{"--net=" + nsPath(ns), "--"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// inNS runs fn on an OS thread switched into ns; sockets fn opens live in ns. The thread
// goes back before it is unlocked (netlab.InNetns): left switched it could be the main
// thread, which Go parks rather than retires (TestNewNetNSLeavesTheProcessWhereItWas).
func inNS(ns *os.File, fn func() error) error { return netlab.InNetns(nsPath(ns), fn) }

func nftConn(t *testing.T, ns *os.File) *nftables.Conn {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// guardRootRuleset fails the test if the machine's own ruleset (root network namespace)
// changes while it runs: every rule a test writes belongs in a namespace it made.
func guardRootRuleset(t *testing.T) {
	t.Helper()
	list := func() string {
		out, err := exec.Command("nft", "list", "ruleset").Output()
		if err != nil {
			t.Fatalf("nft list ruleset (root netns): %v", err)
		}
		return string(out)
	}
	before := list()
	t.Cleanup(func() {
		if after := list(); after != before {
			t.Errorf("the root network namespace's ruleset changed during the test:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

var handleRE = regexp.MustCompile(` # handle \d+`)

// normalise strips what the kernel adds or varies (handles, trailing blanks) so the
// listing can be compared with a golden.
func normalise(s string) string {
	s = handleRE.ReplaceAllString(s, "")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimRight(l, " \t"))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// listBox lists the box tables in ns as the kernel reads them, in Plan's order.
func listBox(t *testing.T, ns *os.File) string {
	t.Helper()
	return normalise(nsRun(t, ns, "nft", "list", "table", "bridge", TableName) +
		nsRun(t, ns, "nft", "list", "table", "inet", TableName))
}

// NewNetNS's goroutine may run on the main thread, which Go cannot retire: when a
// goroutine locked to it ends, the runtime parks the thread for good. Left in the new
// namespace, that thread is the one /proc/self/net reads through, so the whole
// process's /proc/net/arp and /proc/net/route read the empty namespace: the vm drill's
// sibling:arp-claim saw no ARP entry at all ("none", a PASS with the filter on, a
// missed BREACH with it off) and its default-gateway row vanished. The process must
// stay where it was, however many namespaces it made and from which goroutines.
func TestNewNetNSLeavesTheProcessWhereItWas(t *testing.T) {
	requireKernel(t)
	leader := func() string {
		s, err := os.Readlink("/proc/self/ns/net") // the main thread's
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := leader()
	for i := range 200 {
		// From a fresh goroutine each time, as the drill's checks call it: whichever
		// thread runs it, the main one included, must come back.
		errc := make(chan error, 1)
		go func() {
			f, err := NewNetNS()
			if err == nil {
				f.Close()
			}
			errc <- err
		}()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if got := leader(); got != before {
			t.Fatalf("after %d namespaces the main thread is in %s, not %s: /proc/net now reads the empty namespace", i+1, got, before)
		}
	}
}
