package drill_test

// pasta maps UDP to its DNS address 169.254.1.1 to the host's resolver, but not TCP: TCP
// to 169.254.1.1:53 leaves for that link-local address on the host's network, where the
// lab's router answers it. The internet tier's filter accepted TCP there too, so the
// sandbox reached a link-local host (review finding, session 10). With the filter's pasta
// rule UDP only, the metadata row (which probes 169.254.1.1:53 over TCP) passes; a test
// build with BOX_UNSAFE_OFF=resolver-tcp shows it BREACH. slirp4netns maps TCP as well.

import (
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestDrillResolverTCP(t *testing.T) {
	testenv.RequireTool(t, "pasta") // the helper box picks when installed
	w, l := labWorld(t)
	args := []string{"--network", "internet", "--group", "network", "--internet-url", "http://" + lab.InternetName + "/"}
	r := w.drill(l, args...)
	t.Logf("tier internet (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:metadata", drill.Pass)
	r.want(t, "net:internet", drill.Pass)

	off := *w
	off.withProtectionOff(t, bwrap.ProtResolverTCP)
	r = off.drill(l, args...)
	t.Logf("tier internet, TCP to pasta's DNS address let through (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:metadata", drill.Breach)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
	if o := r.rows["net:metadata"].Observed; !strings.Contains(o, lab.LinkLocalDNS.String()+":53") {
		t.Errorf("the breach is not 169.254.1.1:53: %q", o)
	}
}
