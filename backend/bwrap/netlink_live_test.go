package bwrap_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/testenv"
)

// TestUnixSocketNetlinkAdmin: the sandbox holds no capability over its network
// namespace, so `ip link set lo down` must fail, and so it does when the command sends
// it itself; but box makes every address-carrying send of the sandbox (the unix-socket
// mediation), iproute2 names the kernel's address in its sendmsg, and the kernel checks
// such a send against the task that makes it: box, whose uid owns the namespace, so it
// went through (a hostile review's finding, session 11); so did a netlink connect to
// another port. Reads still work. With the
// netlink rule switched off (a test build, BOX_UNSAFE_OFF=socket-netlink) lo goes down:
// the breach.
func TestUnixSocketNetlinkAdmin(t *testing.T) {
	testenv.RequireTool(t, "ip")
	testenv.RequireTool(t, "python3")
	// The connect names another netlink port, which needs CAP_NET_ADMIN too.
	const script = `ip link set lo down; echo "rc=$?"; ip -o link show lo; ip -o addr show lo | grep -q 127.0.0.1 && echo read-ok
python3 -c 'import socket; s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); s.connect((4242, 0))' 2>/dev/null && echo nlconnect-made || echo nlconnect-refused`
	run := func(w *world) string {
		t.Helper()
		r := w.run("run", "-y", "--network", "none", "--", "sh", "-c", script)
		t.Logf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		return r.stdout + r.stderr
	}
	w := newWorld(t)
	out := run(w)
	if !strings.Contains(out, "Operation not permitted") || !strings.Contains(out, "rc=2") {
		t.Errorf("ip link set lo down inside was not refused with EPERM")
	}
	if !strings.Contains(out, "LOWER_UP") || !strings.Contains(out, "read-ok") {
		t.Errorf("lo is not up after, or the sandbox cannot read its addresses")
	}
	if !strings.Contains(out, "nlconnect-refused") {
		t.Errorf("a netlink connect to another port was made")
	}
	t.Run("off", func(t *testing.T) {
		off := newWorld(t)
		off.withProtectionOff(t, "socket-netlink")
		out := run(off)
		if !strings.Contains(out, "rc=0") || strings.Contains(out, "LOWER_UP") || !strings.Contains(out, "nlconnect-made") {
			t.Errorf("with the netlink rule off, lo did not go down or the connect was refused: the test shows no breach")
		}
	})
}

// TestInternetTierNetlinkEscape is what the lent capability was worth to an attacker at
// tier internet (the lab, pasta): the filter accepts whatever leaves by the interface
// named "lo", so the sandbox renames its loopback away, names pasta's tap "lo", puts its
// address and default route back, and the LAN host answers. With box as shipped the
// first rename is EPERM and the LAN stays out. With the netlink rule switched off (a test
// build) the renames are made, and the filter, which takes loopback by its index, still
// rejects the LAN (session 12); with the loopback-by-name filter as well
// (BOX_UNSAFE_OFF=socket-netlink,loopback-index) the LAN's secret page is read: the breach.
func TestInternetTierNetlinkEscape(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range append(lab.Tools, "curl", "pasta", "nsenter", "ip") {
		testenv.RequireTool(t, tool)
	}
	w, l := labWorld(t)
	script := `tap=$(ip -o link | awk -F': ' '$2 != "lo" {print $2; exit}' | cut -d@ -f1)
gw=$(ip route show default | awk '{print $3; exit}')
addr=$(ip -o -4 addr show dev "$tap" | awk '{print $4; exit}')
echo "tap=$tap gw=$gw addr=$addr"
ip link set lo down && ip link set lo name lo0 && ip link set "$tap" down && ip link set "$tap" name lo &&
	ip link set lo up && { ip addr add "$addr" dev lo 2>/dev/null; ip route replace default via "$gw" dev lo; } && echo RENAMED
curl -s --max-time 4 ` + "http://" + netip.AddrPortFrom(lab.LANHost, lab.HTTPPort).String() + `/ ; true
`
	run := func(w *world) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := l.UserCommand(ctx, w.uid, w.gid, w.box, "run", "-y", "--network", "internet", "--", "sh", "-c", script)
		c.Dir = w.proj
		c.Env = append(w.env, "BOX_INTERNET_HELPER=pasta")
		out, err := c.CombinedOutput()
		t.Logf("box run --network internet (%v):\n%s", err, out)
		return string(out)
	}
	out := run(w)
	if strings.Contains(out, "RENAMED") || strings.Contains(out, lab.LANBody) {
		t.Errorf("the sandbox renamed its interfaces or reached the LAN host")
	}
	if !strings.Contains(out, "Operation not permitted") {
		t.Errorf("the first change was not refused with EPERM")
	}
	t.Run("netlink-off", func(t *testing.T) {
		w.t = t
		w.withProtectionOff(t, "socket-netlink")
		if out := run(w); !strings.Contains(out, "RENAMED") || strings.Contains(out, lab.LANBody) {
			t.Errorf("with the netlink rule off: renamed %v, LAN host reached %v; want renamed, not reached (loopback is matched by index)",
				strings.Contains(out, "RENAMED"), strings.Contains(out, lab.LANBody))
		}
	})
	t.Run("both-off", func(t *testing.T) {
		w.t = t
		w.withProtectionOff(t, "socket-netlink,"+bwrap.ProtLoopbackIndex)
		if out := run(w); !strings.Contains(out, "RENAMED") || !strings.Contains(out, lab.LANBody) {
			t.Errorf("with the netlink rule and loopback by index off the LAN host was not reached: the test shows no breach")
		}
	})
}
