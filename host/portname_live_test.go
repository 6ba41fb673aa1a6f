package host_test

// The port-name gap of the restricted tier, measured (host.PortNameGap): on the full
// host stack, a box whose NIC is set as a granted user may set it (its bridge port
// named out of the firewall's veth*/tap* patterns, port isolation off) against a box on
// the placement profile. Where switched IPv4 passes the inet hooks (br_netfilter) the
// host firewall still drops it; with bridge-nf-call-iptables=0 in the lab's host
// namespace it gets through, unless the kernel has nft bridge meta.

import (
	"context"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/host"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestPortNameGapLive(t *testing.T) {
	testenv.RequireRoot(t)
	h := startHostLab(t)
	h.setup(t)
	c := h.incus.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mk := func(name string, dev map[string]map[string]string) string {
		if err := c.Create(ctx, incus.InstancesPost{Name: name, Type: incus.TypeContainer,
			Source:   incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Profiles: []string{host.ProfileName}, Devices: dev}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(ctx, name); err != nil {
			t.Fatal(err)
		}
		ip, err := c.WaitIPv4(ctx, name, "eth0")
		if err != nil {
			t.Fatal(err)
		}
		return ip
	}
	target := mk("pn-target", nil)
	mk("pn-box", nil)
	mk("pn-renamed", map[string]map[string]string{"eth0": {"type": "nic", "network": host.BridgeName, "name": "eth0",
		"host_name": "pnrenamed0", "security.port_isolation": "false"}})
	reaches := func(from string) bool {
		code, err := c.Exec(ctx, from, incus.Exec{Command: []string{"ping", "-c", "2", "-W", "2", target}})
		if err != nil {
			t.Fatal(err)
		}
		return code == 0
	}
	bridgeNF := func(v string) {
		if out, err := h.net.Command(ctx, lab.RoleHost, "sh", "-c", "echo "+v+" > "+host.BridgeNFPath).CombinedOutput(); err != nil {
			t.Fatalf("%s=%s: %v: %s", host.BridgeNFPath, v, err, out)
		}
	}
	meta, err := host.DetectBridgeMeta()
	if err != nil {
		t.Fatal(err)
	}
	for _, nf := range []bool{true, false} {
		bridgeNF(map[bool]string{true: "1", false: "0"}[nf])
		if reaches("pn-box") {
			t.Errorf("bridge-nf-call-iptables=%v: a box on the placement profile reaches another", nf)
		}
		gap := host.PortNameGap(meta, nf)
		if got := reaches("pn-renamed"); got != gap {
			t.Errorf("bridge meta %v, bridge-nf-call-iptables %v: the renamed port reaches another box: %v; host.PortNameGap says %v", meta, nf, got, gap)
		} else {
			t.Logf("bridge meta %v, bridge-nf-call-iptables %v: the renamed port reaches another box: %v (as host.PortNameGap says)", meta, nf, got)
		}
	}
}
