package vm_test

// box --remote for real: two incusd, each in a network namespace of its own, joined
// by a veth pair on a documentation subnet (192.0.2.0/24). The "local" one answers on
// its unix socket; the "remote" one also listens on HTTPS on 192.0.2.10 and trusts a
// client certificate the test makes. box runs in the local lab's namespace (the only
// other place that subnet exists) with an incus client configuration the test writes:
// no packet leaves the lab.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/drill/incuslab"
	"github.com/heavy-duty/box/host"
)

const (
	labLocalCIDR  = "192.0.2.1/24"
	labRemoteCIDR = "192.0.2.10/24"
	labRemoteAddr = "192.0.2.10:8443"
)

// remoteRig is a vmRig whose client and raw instances are the remote's, whose box runs
// in the remote's namespace, and whose local daemon (INCUS_SOCKET) is another lab.
type remoteRig struct {
	*vmRig
	local  *incuslab.Lab
	remote *incuslab.Lab
	conf   string // INCUS_CONF
}

func newRemoteRig(t *testing.T) *remoteRig {
	local := incuslab.Start(t)
	remote := incuslab.Start(t)
	r := &remoteRig{vmRig: newVMRigOn(t, remote), local: local, remote: remote}
	if err := local.Link(r.ctx, remote, labLocalCIDR, labRemoteCIDR); err != nil {
		t.Fatal(err)
	}
	if err := remote.ListenHTTPS(r.ctx, labRemoteAddr); err != nil {
		t.Fatal(err)
	}
	// The local daemon is the other lab: box without --remote must not touch the remote.
	env := r.env[:0:0]
	for _, kv := range r.env {
		if !strings.HasPrefix(kv, "INCUS_DIR=") && !strings.HasPrefix(kv, "INCUS_SOCKET=") {
			env = append(env, kv)
		}
	}
	r.conf = filepath.Join(r.home, "incus-conf")
	r.env = append(append(env, local.Env()...), "INCUS_CONF="+r.conf)

	cert, key, err := incus.NewClientCert("box-remote-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Client.TrustCertificate(r.ctx, "box-remote-test", cert); err != nil {
		t.Fatal(err)
	}
	serverPEM, err := remote.ServerCertPEM()
	if err != nil {
		t.Fatal(err)
	}
	otherPEM, err := local.ServerCertPEM() // a real incusd's certificate, but not this one's
	if err != nil {
		t.Fatal(err)
	}
	addr := "https://" + labRemoteAddr
	cc := incus.ClientConfig{CertPEM: cert, KeyPEM: key, Remotes: map[string]incus.RemoteSpec{
		"lab":      {Addr: addr, ServerCertPEM: serverPEM},
		"imposter": {Addr: addr, ServerCertPEM: otherPEM},
		"down":     {Addr: "https://198.51.100.1:8443", ServerCertPEM: serverPEM}, // no route in the namespace
	}}
	if err := cc.Write(r.conf); err != nil {
		t.Fatal(err)
	}
	// box, run in the local lab's network namespace.
	wrapper := filepath.Join(t.TempDir(), "box-in-lab")
	script := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=%s -- %s \"$@\"\n", local.NetNS, r.box)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.box = wrapper
	return r
}

func TestRemoteLive(t *testing.T) {
	t.Parallel() // its own lab(s): see live_test.go
	r := newRemoteRig(t)
	c := r.remote.Client

	t.Run("new on the remote, nothing on the local daemon", func(t *testing.T) {
		res := r.ok(t, "new", "--remote", "lab", "--name", "far", "--container")
		if !strings.Contains(res.stderr, "box: far is ready (container, 10.211.7.") {
			t.Errorf("new: %q", res.stderr)
		}
		inst, _, err := c.Instance(r.ctx, "far")
		if err != nil {
			t.Fatalf("the box is not on the remote: %v", err)
		}
		if inst.Config[incus.KeyBox] != "1" || !reflect.DeepEqual(inst.Profiles, []string{incuslab.Profile}) {
			t.Errorf("remote box: config %v profiles %v: want the tag and the placement profile only", inst.Config, inst.Profiles)
		}
		if _, _, err := r.local.Client.Instance(r.ctx, "far"); !incus.IsNotFound(err) {
			t.Errorf("the local daemon has far too (%v)", err)
		}
	})

	t.Run("list, info, exec through --remote, REMOTE:NAME and BOX_REMOTE", func(t *testing.T) {
		var list []boxJSON
		if err := json.Unmarshal([]byte(r.ok(t, "list", "--remote", "lab", "--json").stdout), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != "far" || !strings.HasPrefix(list[0].IPv4, "10.211.7.") || list[0].State != "Running" {
			t.Errorf("remote list: %+v", list)
		}
		if out := r.ok(t, "list", "--json").stdout; strings.Contains(out, "far") {
			t.Errorf("the local list shows the remote's box: %s", out)
		}
		info := r.info(t, "lab:far")
		if info.Name != "far" || info.State != "Running" || info.Origin != "mint" {
			t.Errorf("info lab:far: %+v", info)
		}
		r.rootExec("far", "useradd", "--create-home", "--shell", "/bin/bash", "dev")
		// exec over wss: stdin, stdout, stderr and the exit code all cross TLS.
		res := r.run(t, "over tls\n", "exec", "lab:far", "--", "sh", "-c", "id -un; cat; echo err >&2; exit 3")
		if res.code != 3 || res.stdout != "dev\nover tls\n" || res.stderr != "err\n" {
			t.Errorf("exec lab:far: %+v", res)
		}
		// The escape hatch: the incus client pinned to the remote the tag was checked on.
		if res := r.ok(t, "incus", "lab:far", "--", "config", "get", "{}", "user.box.origin"); res.stdout != "mint\n" {
			t.Errorf("box incus lab:far: %+v", res)
		}
		saved := r.env
		r.env = append(append([]string{}, saved...), "BOX_REMOTE=lab")
		if res := r.ok(t, "exec", "far", "--", "hostname"); res.stdout != "far\n" {
			t.Errorf("BOX_REMOTE=lab exec far: %q", res.stdout)
		}
		r.env = saved
	})

	t.Run("snapshot, stop, start, rm on the remote", func(t *testing.T) {
		r.ok(t, "snapshot", "lab:far", "snap1")
		snaps, err := c.Snapshots(r.ctx, "far")
		if err != nil || len(snaps) != 1 || snaps[0].Name != "snap1" {
			t.Errorf("remote snapshots %+v %v", snaps, err)
		}
		r.ok(t, "new", "--remote", "lab", "--name", "near", "--from", "far/snap1")
		if !r.exists("near") {
			t.Error("the clone is not on the remote")
		}
		r.ok(t, "stop", "--remote", "lab", "near", "--force")
		r.ok(t, "rm", "lab:near", "--force")
		if r.exists("near") {
			t.Error("rm lab:near left the box")
		}
	})

	t.Run("refusals name the remote and say what to do", func(t *testing.T) {
		r.fails(t, 2, []string{`names remote lab, but --remote is other`}, "info", "--remote", "other", "lab:far")
		r.fails(t, 2, []string{"one daemon at a time"}, "rename", "lab:far", "other:far")
		r.fails(t, 2, []string{"no such remote", "the remotes there are down, imposter, lab"}, "list", "--remote", "nope")
		r.fails(t, 1, []string{"remote down (https://198.51.100.1:8443)", "incus info down:"}, "list", "--remote", "down")
		r.fails(t, 125, []string{"no such remote"}, "exec", "nope:far", "--", "true")
		saved := r.env
		r.env = append(append([]string{}, saved...), "BOX_PLACEMENT_PROFILE=nowhere")
		r.fails(t, 1, []string{`placement profile "nowhere" does not exist on remote lab`, "box setup-host --remote lab"}, "new", "--name", "lab:x", "--container")
		r.env = saved
	})

	t.Run("a server whose certificate is not the accepted one is refused", func(t *testing.T) {
		before := r.freeze("far")
		r.fails(t, 1, []string{"remote imposter", "not the one accepted for it", "incus remote remove imposter"},
			"rm", "--remote", "imposter", "far", "--force")
		r.fails(t, 1, []string{"not the one accepted"}, "list", "--remote", "imposter")
		if after := r.freeze("far"); !reflect.DeepEqual(before, after) {
			t.Errorf("far changed through a refused server:\n%+v\n%+v", before, after)
		}
	})

	t.Run("an untrusted client certificate is told how to get trusted", func(t *testing.T) {
		cert, key, _ := incus.NewClientCert("stranger")
		dir := filepath.Join(r.home, "stranger-conf")
		pem, _ := r.remote.ServerCertPEM()
		if err := (incus.ClientConfig{CertPEM: cert, KeyPEM: key, Remotes: map[string]incus.RemoteSpec{"lab": {Addr: "https://" + labRemoteAddr, ServerCertPEM: pem}}}).Write(dir); err != nil {
			t.Fatal(err)
		}
		saved := r.env
		r.env = append(append([]string{}, saved...), "INCUS_CONF="+dir)
		r.fails(t, 1, []string{"does not trust this client certificate", "incus config trust add-certificate"}, "info", "lab:far")
		r.env = saved
	})

	t.Run("the tag boundary holds on the remote: the drill's verbs row", func(t *testing.T) {
		env := append(append([]string{}, r.env...), "BOX_REMOTE=lab")
		o := drill.UntaggedOptions{Client: c, Image: incuslab.ImageAlias, Profile: incuslab.Profile, Run: drill.BinaryRunner(r.box, env), Logf: t.Logf}
		start := time.Now()
		row := drill.UntaggedVerbs(r.ctx, o)
		t.Logf("remote untagged: %s (%s) in %s", row.Status, row.Observed, time.Since(start).Round(time.Millisecond))
		if row.Status != drill.Pass {
			t.Errorf("untagged instance on the remote: %s (%s), want PASS", row.Status, row.Observed)
		}
		// The same row with the protection off (the instance tagged): the verbs reach it
		// through the remote, and the row must say BREACH.
		o.Config = map[string]string{incus.KeyBox: "1"}
		row = drill.UntaggedVerbs(r.ctx, o)
		if row.Status != drill.Breach || !strings.Contains(row.Observed, "exec: accepted") {
			t.Errorf("tag check bypassed on the remote: %s (%s), want BREACH", row.Status, row.Observed)
		}
	})

	t.Run("rm --remote removes the remote's box", func(t *testing.T) {
		r.ok(t, "rm", "--remote", "lab", "far", "--force")
		if r.exists("far") {
			t.Error("far is still on the remote")
		}
	})

	t.Run("setup-host and doctor --remote build and check the stack there", func(t *testing.T) {
		out := r.ok(t, "setup-host", "--remote", "lab", "--resolver", "203.0.113.10")
		for _, want := range []string{"network boxnet", "box-isolate", "profile box-net", "not applied here", "run 'box setup-host' there as root"} {
			if !strings.Contains(out.stdout+out.stderr, want) {
				t.Errorf("setup-host --remote lacks %q:\n%s%s", want, out.stdout, out.stderr)
			}
		}
		if _, err := r.local.Client.Network(r.ctx, host.BridgeName); !incus.IsNotFound(err) {
			t.Errorf("the local daemon got a bridge too (%v)", err)
		}
		// The ACL drops the remote host's address, read through the API, not the address
		// of the machine box runs on.
		acl, err := c.NetworkACLByName(r.ctx, host.ACLName)
		if err != nil {
			t.Fatal(err)
		}
		dsts := ""
		for _, rule := range acl.Egress {
			dsts += rule.Destination + " "
		}
		if !strings.Contains(dsts, "192.0.2.10") || strings.Contains(dsts, "192.0.2.1/") || strings.Contains(dsts, "192.0.2.1 ") {
			t.Errorf("ACL egress destinations %q: want the remote's 192.0.2.10, not the local 192.0.2.1", dsts)
		}
		r.fails(t, 2, []string{"--firewall-only applies this machine's nftables", "run 'box setup-host' there"}, "setup-host", "--remote", "lab", "--firewall-only")

		// A box on the real placement profile, on the remote; doctor passes but says
		// what it cannot check from here.
		saved := r.env
		r.env = append(append([]string{}, saved...), "BOX_PLACEMENT_PROFILE="+host.ProfileName)
		r.ok(t, "new", "--remote", "lab", "--name", "stacked", "--container")
		r.env = saved
		inst, _, err := c.Instance(r.ctx, "stacked")
		if err != nil || !reflect.DeepEqual(inst.Profiles, []string{host.ProfileName}) {
			t.Errorf("stacked: %+v %v: want the remote's box-net only", inst, err)
		}
		doc := r.ok(t, "doctor", "--remote", "lab")
		for _, want := range []string{"ok    acl rules", "ok    profile", "warn  firewall", "not checked from here", "ok    boxes on the stack"} {
			if !strings.Contains(doc.stdout, want) {
				t.Errorf("doctor --remote lacks %q:\n%s", want, doc.stdout)
			}
		}
		r.ok(t, "rm", "--remote", "lab", "stacked", "--force")
		saved = r.env
		r.env = append(append([]string{}, saved...), "BOX_REMOTE=lab")
		r.fails(t, 2, []string{"teardown-host acts on this machine's host stack, but BOX_REMOTE=lab is set"}, "teardown-host")
		r.env = saved
	})
}
