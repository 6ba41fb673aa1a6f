package vm_test

// box expose for real, on the real isolation stack (setup-host in drill/lab's topology):
// the door answers on the host's loopback, and neither the LAN nor a sibling box gains
// a path; a door that listens beyond loopback (added through incus, protection off) is
// seen by the LAN probe and failed by doctor.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/host"
)

// doorBody is what the server in the box answers; doorServer serves it on every
// address of the box, so only isolation (never the server's bind) keeps others out.
const doorBody = "box-test: behind the door\n"

const doorServer = `setsid sh -c 'while :; do printf "HTTP/1.0 200 OK\r\nContent-Length: 26\r\n\r\nbox-test: behind the door\n" | nc -N -l 3000; done' >/dev/null 2>&1 </dev/null &`

func TestVMExposeLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	h := startHostLab(t)
	h.setup(t)
	c := h.incus.Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // as the rig's (boxtest.NewVMRigOn)
	defer cancel()
	pool, err := c.RootPool(ctx, host.ProfileName)
	must(t, err)
	ips := map[string]string{}
	for _, n := range []string{"web", "peer"} {
		req, err := incus.MintRequest(incus.Mint{Name: n, Profile: host.ProfileName, Image: incuslab.ImageAlias, CPU: "1",
			Memory: "512MiB", Disk: "2GiB", Pool: pool, Template: "blank", User: "root", Created: time.Now()})
		must(t, err)
		must(t, c.Create(ctx, req))
		must(t, c.Start(ctx, n))
		ips[n], err = c.WaitIPv4(ctx, n, "eth0")
		must(t, err)
	}
	inBox := func(name string, cmd ...string) (int, string) {
		var out bytes.Buffer
		code, err := c.Exec(ctx, name, incus.Exec{Command: cmd, Stdout: &out, Stderr: &out})
		must(t, err)
		return code, out.String()
	}
	if code, out := inBox("web", "sh", "-c", doorServer); code != 0 {
		t.Fatalf("server in web: %d %s", code, out)
	}
	get := func(role, url string) (string, error) {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return h.net.Get(gctx, role, url)
	}
	// waitDoor waits for the condition "the door answers" (the server starts on its own
	// time), up to a bound; it never asserts a duration.
	waitDoor := func(role, url string) string {
		deadline := time.Now().Add(60 * time.Second)
		for {
			body, err := get(role, url)
			if err == nil && body == doorBody {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s from %s: %q %v", url, role, body, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	out, stderr, code := h.run(t, "expose", "web", "3000", "18080")
	if code != 0 || !strings.Contains(stderr, "127.0.0.1:18080 -> web:3000") {
		t.Fatalf("expose: exit %d: %s %s", code, out, stderr)
	}

	t.Run("the door answers on the host's loopback", func(t *testing.T) {
		waitDoor(lab.RoleHost, "http://127.0.0.1:18080/")
	})

	t.Run("the LAN gains no path: not the host port, not the box through the host", func(t *testing.T) {
		if body, err := get(lab.RoleLANHost, "http://"+lab.HostPrivate.String()+":18080/"); err == nil {
			t.Errorf("LAN reached the door on the host's LAN address: %q", body)
		}
		// A LAN machine that routes the box subnet through the host.
		subnet := ips["web"][:strings.LastIndex(ips["web"], ".")] + ".0/24"
		if o, err := h.net.Command(ctx, lab.RoleLANHost, "ip", "route", "replace", subnet, "via", lab.HostPrivate.String()).CombinedOutput(); err != nil {
			t.Fatalf("route: %v %s", err, o)
		}
		if body, err := get(lab.RoleLANHost, "http://"+ips["web"]+":3000/"); err == nil {
			t.Errorf("LAN reached the box's server through the host: %q", body)
		}
	})

	t.Run("a sibling gains no path: not the box, not the host port", func(t *testing.T) {
		gw, err := c.Network(ctx, host.BridgeName)
		must(t, err)
		gwIP := strings.Split(gw.Config["ipv4.address"], "/")[0]
		for _, url := range []string{"http://" + ips["web"] + ":3000/", "http://" + gwIP + ":18080/", "http://127.0.0.1:18080/"} {
			if code, out := inBox("peer", "curl", "-s", "-m", "3", url); code == 0 {
				t.Errorf("peer reached %s: %q", url, out)
			}
		}
	})

	t.Run("info, list, doctor show the door", func(t *testing.T) {
		out, _, code := h.run(t, "info", "web", "--json")
		var info infoJSON
		if code != 0 || json.Unmarshal([]byte(out), &info) != nil || len(info.Exposed) != 1 || info.Exposed[0].Port != 3000 || info.Exposed[0].HostPort != 18080 {
			t.Errorf("info --json: %d %s", code, out)
		}
		if out := h.mustRun(t, "info", "web"); !strings.Contains(out, "exposed:") || !strings.Contains(out, "127.0.0.1:18080 -> port 3000") {
			t.Errorf("info: %s", out)
		}
		if out := h.mustRun(t, "expose", "web", "--list"); !strings.Contains(out, "3000  127.0.0.1:18080") {
			t.Errorf("--list: %q", out)
		}
		if ck := doctorCheck(t, h, CheckExposures); ck.Status != host.OK || !strings.Contains(ck.Detail, "127.0.0.1:18080 -> web:3000") {
			t.Errorf("doctor: %+v", ck)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"expose", "web", "3000"}, "already exposes port 3000"},
			{[]string{"expose", "peer", "4000", "18080"}, "host port 18080 is in use (device expose-3000 of instance web)"},
			{[]string{"expose", "peer", "4000", "8080"}, "host port 8080 is in use (something on this host listens on it)"},
			{[]string{"expose", "peer", "--remove", "4000"}, `box "peer" has no door to port 4000`},
		} {
			if _, stderr, code := h.run(t, tc.args...); code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("box %v: exit %d: %s", tc.args, code, stderr)
			}
		}
		req := incus.InstancesPost{Name: "payroll", Type: incus.TypeContainer, Source: incus.InstanceSource{Type: "image", Alias: incuslab.ImageAlias},
			Profiles: []string{host.ProfileName}, Config: map[string]string{"user.owner": "finance"}}
		must(t, c.Create(ctx, req))
		if _, stderr, code := h.run(t, "expose", "payroll", "3000", "18090"); code != 1 || !strings.Contains(stderr, `instance "payroll" is not a box`) {
			t.Errorf("untagged: exit %d: %s", code, stderr)
		}
		if inst, _, _ := c.Instance(ctx, "payroll"); len(inst.Devices) != 0 {
			t.Errorf("payroll got devices: %v", inst.Devices)
		}
	})

	t.Run("protection off: a door beyond loopback is seen from the LAN and failed by doctor", func(t *testing.T) {
		inst, etag, err := c.Instance(ctx, "web")
		must(t, err)
		put := incus.InstancePut{Architecture: inst.Architecture, Config: inst.Config, Devices: inst.Devices, Profiles: inst.Profiles}
		put.Devices["wide"] = map[string]string{"type": "proxy", "bind": "host", "listen": "tcp:0.0.0.0:18081", "connect": "tcp:127.0.0.1:3000"}
		must(t, c.Update(ctx, "web", put, etag))
		waitDoor(lab.RoleLANHost, "http://"+lab.HostPrivate.String()+":18081/")
		if ck := doctorCheck(t, h, CheckExposures); ck.Status != host.Fail || !strings.Contains(ck.Detail, "web/wide (listen tcp:0.0.0.0:18081)") {
			t.Errorf("doctor with a wide door: %+v", ck)
		}
		inst, etag, err = c.Instance(ctx, "web")
		must(t, err)
		delete(inst.Devices, "wide")
		put.Devices = inst.Devices
		must(t, c.Update(ctx, "web", put, etag))
	})

	t.Run("a clone starts without its source's door", func(t *testing.T) {
		h.mustRun(t, "new", "--name", "webclone", "--from", "web", "-q")
		inst, _, err := c.Instance(ctx, "webclone")
		must(t, err)
		if _, ok := inst.Devices["expose-3000"]; ok || !inst.Running() {
			t.Errorf("clone: %s, devices %v", inst.Status, inst.Devices)
		}
	})

	t.Run("--remove closes the door", func(t *testing.T) {
		h.mustRun(t, "expose", "web", "--remove", "3000")
		if body, err := get(lab.RoleHost, "http://127.0.0.1:18080/"); err == nil {
			t.Errorf("the door still answers: %q", body)
		}
		if _, stderr, _ := h.run(t, "expose", "web", "--list"); !strings.Contains(stderr, "web has no exposed ports") {
			t.Errorf("--list: %s", stderr)
		}
	})
	t.Run("the drill's door rows pass, and BREACH when the door listens beyond loopback", func(t *testing.T) {
		before, _, err := c.Instance(ctx, "web")
		must(t, err)
		o := drill.DoorOptions{Client: c, Box: "web", Port: 3000, Dial: lab.Dialer(h.net.HostNS()),
			HostAddrs: []netip.Addr{lab.HostPrivate, lab.HostPublic, netip.MustParseAddr("127.0.0.1")}}
		for _, r := range drill.DoorProbes(ctx, o) {
			if r.Status != drill.Pass {
				t.Errorf("%s: %s (%s)", r.ID, r.Status, r.Observed)
			}
		}
		o.Listen = "0.0.0.0" // protection off: box expose's loopback-only listen
		rows := drill.DoorProbes(ctx, o)
		if len(rows) != 2 || rows[0].Status != drill.Pass || rows[1].Status != drill.Breach ||
			!strings.Contains(rows[1].Observed, lab.HostPrivate.String()) {
			t.Errorf("wide door: %+v", rows)
		}
		if inst, _, _ := c.Instance(ctx, "web"); !reflect.DeepEqual(inst.Devices, before.Devices) {
			t.Errorf("the probes left devices: %v, before %v", inst.Devices, before.Devices)
		}
	})

}

func doctorCheck(t *testing.T, h *hostLab, name string) host.Check {
	t.Helper()
	out, _, _ := h.run(t, "doctor", "--json", "--unit-dir", h.unitDir)
	var cs []host.Check
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("doctor --json: %v: %s", err, out)
	}
	for _, ck := range cs {
		if ck.Name == name {
			return ck
		}
	}
	t.Fatalf("doctor has no %q check: %s", name, out)
	return host.Check{}
}
