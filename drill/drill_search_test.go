package drill_test

// The allowlist proxy resolves a name on the host. Unrooted, Go's resolver applies the
// host's search list to a name that does not exist: *.allowed.test allows nx.allowed.test,
// which does not exist, and the lab's resolv.conf says "search corp.test", so the proxy
// dialled nx.allowed.test.corp.test, another host (review finding, session 10). Rooted,
// the name is refused; a test build with BOX_UNSAFE_OFF=resolver-search shows the
// BREACH.

import (
	"os"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

func TestDrillAllowlistSearchDomain(t *testing.T) {
	w, l := labWorld(t)
	// The operator's resolver configuration has a search domain (bound at /etc/resolv.conf
	// for box in the lab's host namespace).
	if err := os.WriteFile(l.ResolvConf, []byte("nameserver "+lab.Internet.String()+"\nsearch "+lab.SearchDomain+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--network", "allowlist", "--group", "network", "--allow", "*.allowed.test", "--allow", "allowed.test",
		"--internet-url", "http://denied.test/", "--allowed-url", "http://allowed.test/",
		"--rebind-url", "http://" + lab.SearchName + "/"}
	r := w.drill(l, args...)
	t.Logf("tier allowlist (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:rebind", drill.Pass)
	r.want(t, "net:internet", drill.Pass)

	off := *w
	off.withProtectionOff(t, bwrap.ProtResolverSearch)
	r = off.drill(l, args...)
	t.Logf("tier allowlist, the search list applied (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:rebind", drill.Breach)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
}
