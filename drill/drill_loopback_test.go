package drill_test

// The uplink renamed "lo" (drill row net:loopback-rename, tier internet): as shipped the
// first change is EPERM; with box's netlink rule off (test build) the renames are made
// and the filter, which takes loopback by its index, still keeps the LAN out; with
// loopback by name as well (BOX_UNSAFE_OFF=socket-netlink,loopback-index) the LAN host
// answers: BREACH (review findings, sessions 11 and 12).

import (
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/lab"
)

func TestDrillLoopbackRename(t *testing.T) {
	w, l := labWorld(t)
	args := []string{"--network", "internet", "--group", "network", "--internet-url", "http://" + lab.InternetName + "/",
		"--lan", lab.LANHost.String() + ":80"}
	r := w.drill(l, args...)
	t.Logf("tier internet (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:loopback-rename", drill.Pass)
	r.want(t, "net:internet", drill.Pass)
	if d := r.rows["net:loopback-rename"].Observed; !strings.Contains(d, "EPERM") {
		t.Errorf("detail %q: want the first change refused with EPERM", d)
	}

	off := *w
	off.withProtectionOff(t, "socket-netlink")
	r = off.drill(l, args...)
	t.Logf("tier internet, netlink rule off (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:loopback-rename", drill.Pass)
	if d := r.rows["net:loopback-rename"].Observed; !strings.Contains(d, "renamed") {
		t.Errorf("detail %q: want the renames made (the index rule alone holding)", d)
	}

	off.withProtectionOff(t, "socket-netlink,"+bwrap.ProtLoopbackIndex)
	r = off.drill(l, args...)
	t.Logf("tier internet, netlink rule and loopback by index off (exit %d):\n%s%s", r.code, r.table(), r.stderr)
	r.want(t, "net:loopback-rename", drill.Breach)
	if r.code != 1 {
		t.Errorf("exit %d, want 1", r.code)
	}
}
