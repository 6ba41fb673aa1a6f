package bwrap

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/inet"
	"github.com/heavy-duty/box/backend/bwrap/sshagent"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/crypto/ssh"
)

func sshRequest(t *testing.T) (Request, Facts) {
	t.Helper()
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	hk, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	r := testRequest()
	r.Profile.Network = NetInternet
	r.Profile.SSH = &profiles.SSH{Hosts: []string{"forge.example"}, Keys: []string{"SHA256:abc"}, Sign: true}
	f := testFacts()
	f.RunID = "r1"
	f.Environ = append(f.Environ, "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1")
	f.SSH = SSHFacts{Hosts: []sshagent.Host{{Name: "forge.example", Keys: []ssh.PublicKey{hk}}}}
	return r, f
}

func TestResolveSSH(t *testing.T) {
	r, f := sshRequest(t)
	p, err := Resolve(r, f)
	if err != nil {
		t.Fatal(err)
	}
	if p.SSH == nil || p.SSH.Upstream != "/tmp/ssh-x/agent.1" || p.SSH.Dir != "/home/u/.local/share/box/ssh/r1" || !p.SSH.Policy.Sign {
		t.Fatalf("plan %+v", p.SSH)
	}
	vars := map[string]string{}
	for _, v := range p.Vars {
		vars[v.Name] = v.Value
	}
	if vars["SSH_AUTH_SOCK"] != SSHDirInside+"/agent.sock" || vars["GIT_SSH_COMMAND"] != "ssh -F "+SSHDirInside+"/config" {
		t.Errorf("vars %v", vars)
	}
	if !slices.Contains(p.Spec.UnixSockets.Allowed, SSHDirInside+"/agent.sock") || slices.Contains(p.Spec.UnixSockets.Allowed, "/tmp/ssh-x/agent.1") {
		t.Errorf("sockets admitted %v", p.Spec.UnixSockets.Allowed)
	}
	pr, err := Args(p.Spec, p.Host)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(pr, " ")
	if !strings.Contains(argv, "--ro-bind /home/u/.local/share/box/ssh/r1 "+SSHDirInside) || strings.Contains(argv, "/tmp/ssh-x") {
		t.Errorf("argv %s", argv)
	}
	if md := SandboxMD(p.Policy); !strings.Contains(md, "## SSH") || !strings.Contains(md, "`forge.example`") || !strings.Contains(md, SSHDirInside+"/requests.log") {
		t.Errorf("SANDBOX.md:\n%s", md)
	}
	// Without the filter the host agent's variable never enters either.
	r2 := testRequest()
	p2, err := Resolve(r2, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p2.Vars {
		if v.Name == "SSH_AUTH_SOCK" {
			t.Errorf("SSH_AUTH_SOCK entered without the filter: %s", v.Value)
		}
	}
}

func TestResolveSSHRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Request, *Facts)
		want error
	}{
		{"no agent", func(r *Request, f *Facts) { f.Environ = f.Environ[:len(f.Environ)-1] }, ErrSSHNoAgent},
		{"flag without keys", func(r *Request, f *Facts) { r.Profile.SSH = nil; r.SSHHosts = []string{"forge.example"} }, ErrSSHNoKeys},
		{"bad flag host", func(r *Request, f *Facts) { r.SSHHosts = []string{"git@forge.example"} }, sshagent.ErrHostSpec},
		{"unknown host key", func(r *Request, f *Facts) {
			f.SSH = SSHFacts{Err: &sshagent.HostError{Host: "x", Err: sshagent.ErrNoHostKey}}
		}, sshagent.ErrNoHostKey},
		{"allowlist tier, by address", func(r *Request, f *Facts) {
			r.Profile.Network = NetAllowlist
			r.SSHHosts = []string{"203.0.113.10:2222"}
		}, ErrSSHAllowlist},
		{"allowlist tier, IPv6 address", func(r *Request, f *Facts) {
			r.Profile.Network = NetAllowlist
			r.SSHHosts = []string{"[2001:db8::1]:22"}
		}, ErrSSHAllowlist},
		{"allowlist tier, single label", func(r *Request, f *Facts) {
			r.Profile.Network = NetAllowlist
			r.SSHHosts = []string{"forge"}
		}, ErrSSHAllowlist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, f := sshRequest(t)
			tc.edit(&r, &f)
			if _, err := Resolve(r, f); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// On the allowlist tier the SSH hosts go to the tier's proxy by name and port (22 by
// default), and SANDBOX.md says they are reached by name.
func TestResolveSSHAllowlist(t *testing.T) {
	r, f := sshRequest(t)
	r.Profile.Network = NetAllowlist
	r.SSHHosts = []string{"Git.Example.org:2222"}
	p, err := Resolve(r, f)
	if err != nil {
		t.Fatal(err)
	}
	want := []inet.SSHHost{{Name: "forge.example", Port: 22}, {Name: "git.example.org", Port: 2222}}
	if !slices.Equal(p.sshByName(), want) {
		t.Errorf("by name %v, want %v", p.sshByName(), want)
	}
	if md := SandboxMD(p.Policy); !strings.Contains(md, "only by name") {
		t.Errorf("SANDBOX.md:\n%s", md)
	}
	r.Profile.Network = NetInternet
	if p, err := Resolve(r, f); err != nil || p.sshByName() != nil {
		t.Errorf("internet tier: %v %v", p.sshByName(), err)
	}
}
