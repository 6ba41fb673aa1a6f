package bwrap_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// sshLab is the SSH side of the lab: a real ssh-agent of the test user holding two keys
// (one chosen by the profile), and two SSH servers (x/crypto/ssh, in the lab's internet
// namespace): the forge on :22 serving a bare git repository, prod on :2222.
type sshLab struct {
	agentSock           string
	chosenKey, otherFP  string
	chosenFP, chosenPub string
	forge, prod         ssh.Signer
	repo                string
	onward              chan string // what the forge's onward attempt through a forwarded agent got
}

const (
	forgeHost = "203.0.113.10"      // lab.Internet, port 22
	prodHost  = "203.0.113.10:2222" // the same machine, another sshd: not allowed
)

func asUser(w *world, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = w.env
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
	return c
}

func mustUser(t *testing.T, c *exec.Cmd) string {
	t.Helper()
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", c.Args, err, out)
	}
	return string(out)
}

func newSSHLab(t *testing.T, w *world, l *lab.Lab) *sshLab {
	t.Helper()
	s := &sshLab{onward: make(chan string, 1)}
	dir, err := os.MkdirTemp("", "box-ssh-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chown(dir, w.uid, w.gid)
	s.agentSock = filepath.Join(dir, "agent.sock")
	ag := asUser(w, "ssh-agent", "-D", "-a", s.agentSock)
	out, _ := ag.StdoutPipe()
	if err := ag.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ag.Process.Kill(); ag.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, "SSH_AUTH_SOCK") {
		t.Fatalf("ssh-agent: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
	// The user's keys, in their ~/.ssh as on any machine: the files never enter.
	w.write(filepath.Join(w.home, ".ssh", "placeholder"), "")
	s.chosenKey = filepath.Join(w.home, ".ssh", "id_chosen")
	other := filepath.Join(w.home, ".ssh", "id_other")
	for _, k := range []string{s.chosenKey, other} {
		mustUser(t, asUser(w, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", filepath.Base(k), "-f", k))
	}
	fp := func(k string) string {
		return strings.Fields(mustUser(t, asUser(w, "ssh-keygen", "-l", "-E", "sha256", "-f", k+".pub")))[1]
	}
	s.chosenFP, s.otherFP = fp(s.chosenKey), fp(other)
	pub, _ := os.ReadFile(s.chosenKey + ".pub")
	s.chosenPub = strings.TrimSpace(string(pub))
	add := asUser(w, "ssh-add", s.chosenKey, other)
	add.Env = append(boxtest.EnvWithout(w.env, "SSH_AUTH_SOCK"), "SSH_AUTH_SOCK="+s.agentSock)
	mustUser(t, add)

	s.forge, s.prod = hostSigner(t), hostSigner(t)
	// The user has connected to both before: known_hosts holds both keys (prod's too,
	// so it is the agent, not host key checking, that keeps the sandbox out of prod).
	kh := fmt.Sprintf("%s %s\n[%s]:2222 %s\n", forgeHost, authorized(s.forge.PublicKey()), forgeHost, authorized(s.prod.PublicKey()))
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), kh)

	s.repo = filepath.Join(dir, "forge.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", s.repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for _, srv := range []struct {
		addr   string
		signer ssh.Signer
		forge  bool
	}{{forgeHost + ":22", s.forge, true}, {prodHost, s.prod, false}} {
		ln, err := lab.Listen(l.NSPath(lab.RoleInet), "tcp", srv.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		cfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }}
		cfg.AddHostKey(srv.signer)
		forge := srv.forge
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go s.serve(c, cfg, forge)
			}
		}()
	}
	return s
}

func hostSigner(t *testing.T) ssh.Signer {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func authorized(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// serve is one SSH connection: the forge runs git-receive-pack/git-upload-pack on its
// repository, and "onward" (after ssh -A) asks the forwarded agent for a signature.
func (s *sshLab) serve(c net.Conn, cfg *ssh.ServerConfig, forge bool) {
	defer c.Close()
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "no")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for r := range creqs {
				switch r.Type {
				case "auth-agent-req@openssh.com", "env":
					r.Reply(true, nil)
				case "exec":
					var m struct{ Cmd string }
					ssh.Unmarshal(r.Payload, &m)
					r.Reply(true, nil)
					code := s.exec(sc, ch, m.Cmd, forge)
					ch.SendRequest("exit-status", false, ssh.Marshal(struct{ C uint32 }{code}))
					return
				default:
					r.Reply(false, nil)
				}
			}
		}()
	}
}

func (s *sshLab) exec(sc *ssh.ServerConn, ch ssh.Channel, cmd string, forge bool) uint32 {
	if !forge {
		fmt.Fprintln(ch, "prod: logged in")
		return 0
	}
	if cmd == "onward" {
		s.onward <- s.tryOnward(sc)
		return 0
	}
	f := strings.Fields(cmd)
	if len(f) != 2 || (f[0] != "git-receive-pack" && f[0] != "git-upload-pack") || strings.Trim(f[1], "'") != "/forge.git" {
		fmt.Fprintf(ch.Stderr(), "forge: unknown command %q\n", cmd)
		return 1
	}
	g := exec.Command("git", strings.TrimPrefix(f[0], "git-"), s.repo)
	g.Stdin, g.Stdout, g.Stderr = ch, ch, ch.Stderr()
	if err := g.Run(); err != nil {
		return 1
	}
	return 0
}

// tryOnward is what a process on the forge can do with a forwarded agent: bind a session
// of its own (here, for an allowed host's key: the forge's) and ask for its signature.
func (s *sshLab) tryOnward(sc *ssh.ServerConn) string {
	ch, reqs, err := sc.OpenChannel("auth-agent@openssh.com", nil)
	if err != nil {
		return "no agent channel: " + err.Error()
	}
	defer ch.Close()
	go ssh.DiscardRequests(reqs)
	a := agent.NewClient(ch)
	keys, err := a.List()
	if err != nil || len(keys) == 0 {
		return fmt.Sprintf("no key listed: %v", err)
	}
	sid := make([]byte, 32)
	rand.Read(sid)
	sig, _ := s.forge.Sign(rand.Reader, sid)
	a.Extension("session-bind@openssh.com", ssh.Marshal(struct {
		HostKey, SessionID, Signature []byte
		Forwarding                    bool
	}{s.forge.PublicKey().Marshal(), sid, ssh.Marshal(sig), false}))
	req := ssh.Marshal(struct {
		SessionID             []byte
		Type                  byte
		User, Service, Method string
		HasSig                bool
		Algo                  string
		PubKey                []byte
	}{sid, 50, "git", "ssh-connection", "publickey", true, keys[0].Format, keys[0].Blob})
	if _, err := a.Sign(keys[0], req); err != nil {
		return "refused"
	}
	return "SIGNED"
}

// TestSSHAgentFilter: from a real sandbox (tier full, in the lab) as the unprivileged
// user: git push to the allowed forge works through box's filter; ssh to prod with the
// same key is refused by the filter and logged; a process on the forge gets no signature
// through ssh -A; ssh-add -L lists only the chosen key; ssh-add -D and adding a key are
// refused; a commit signed inside (gpg.format=ssh) verifies on the host; the private key
// file and the host's agent socket are unreachable inside.
func TestSSHAgentFilter(t *testing.T) {
	boxtest.RequireLab(t)
	for _, tool := range []string{"ssh", "ssh-agent", "ssh-add", "ssh-keygen", "git"} {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	l := lab.New(t)
	s := newSSHLab(t, w, l)
	w.env = append(boxtest.EnvWithout(w.env, "SSH_AUTH_SOCK"), "SSH_AUTH_SOCK="+s.agentSock)
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "push.toml"),
		fmt.Sprintf("network = \"full\"\nssh = { hosts = [%q], keys = [%q], sign = true }\n", forgeHost, s.chosenFP))

	script := fmt.Sprintf(`set -u
echo "list:"; ssh-add -L
ssh-add -D >/dev/null 2>&1; echo "delete=$?"
ssh-keygen -q -t ed25519 -N '' -f /tmp/new >/dev/null && ssh-add /tmp/new >/dev/null 2>&1; echo "add=$?"
cat %[1]s >/dev/null 2>&1; echo "keyfile=$?"
test -e %[2]s; echo "hostsock=$?"
SSH_AUTH_SOCK=%[2]s ssh-add -l >/dev/null 2>&1; echo "hostagent=$?"
git add README
printf '%%s\n' '%[3]s' > /tmp/signing.pub
git -c user.name=Agent -c user.email=me@example.org -c gpg.format=ssh -c user.signingkey=/tmp/signing.pub commit -q -S -m signed && echo "commit=0"
git push -q ssh://git@%[4]s/forge.git main 2>&1; echo "push=$?"
ssh -F /run/box/ssh/config -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes git@%[4]s true 2>/dev/null; echo "prod=$?"
ssh -F /run/box/ssh/config -A -o BatchMode=yes git@%[4]s onward 2>/dev/null; echo "onward=$?"
`, s.chosenKey, s.agentSock, s.chosenPub, forgeHost)
	// The operator's repository, made on the host (one made inside would go to the
	// post-run audit's quarantine).
	mustUser(t, func() *exec.Cmd { c := asUser(w, "git", "init", "-q", "-b", "main", "."); c.Dir = w.proj; return c }())
	r := w.pub().InLab(l, nil, "run", "-y", "-p", "push", "--", "sh", "-c", script)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	for _, want := range []string{"delete=1", "add=1", "keyfile=1", "hostsock=1", "hostagent=", "commit=0", "push=0", "prod=255", "onward=0"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(r.Stdout, "hostagent=0") {
		t.Error("the host's agent answered inside")
	}
	if strings.Count(r.Stdout, "ssh-ed25519 ") != 1 || !strings.Contains(r.Stdout, strings.Fields(s.chosenPub)[1]) {
		t.Errorf("ssh-add -L inside does not list exactly the chosen key")
	}
	select {
	case got := <-s.onward:
		if got != "refused" {
			t.Errorf("ssh -A onward from the forge: %s", got)
		}
	default:
		t.Error("the forge's onward attempt never ran")
	}
	if !strings.Contains(r.Stderr, "box: ssh agent: ") {
		t.Errorf("no summary line:\n%s", r.Stderr)
	}

	// The push landed, and the signed commit verifies on the host.
	verify := exec.Command("git", "-C", s.repo, "-c", "gpg.ssh.allowedSignersFile="+filepath.Join(w.home, "allowed_signers"), "verify-commit", "main")
	w.write(filepath.Join(w.home, "allowed_signers"), "me@example.org "+s.chosenPub+"\n")
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("git verify-commit on the host: %v\n%s", err, out)
	}

	// The log: the push signed for the forge, prod refused for its key, the forwarded
	// request refused as forwarded.
	logs, _ := filepath.Glob(filepath.Join(w.home, ".local", "share", "box", "ssh", "*", "requests.log"))
	if len(logs) != 1 {
		t.Fatalf("request logs: %v", logs)
	}
	data, _ := os.ReadFile(logs[0])
	var forgeOK, prodRefused, fwdRefused, gitSig bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			Op, Key, Host, Reason string
			Allowed               bool
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch {
		case rec.Op == "sign" && rec.Allowed && rec.Host == forgeHost && rec.Key == s.chosenFP:
			forgeOK = true
		case rec.Op == "sign" && !rec.Allowed && strings.Contains(rec.Host, ssh.FingerprintSHA256(s.prod.PublicKey())):
			prodRefused = true
		case rec.Op == "sign" && !rec.Allowed && strings.Contains(rec.Reason, "forwarded"):
			fwdRefused = true
		case rec.Op == "sign-git" && rec.Allowed:
			gitSig = true
		}
	}
	if !forgeOK || !prodRefused || !fwdRefused || !gitSig {
		t.Errorf("log: forge signed %v, prod refused %v, forwarded refused %v, git signature %v:\n%s", forgeOK, prodRefused, fwdRefused, gitSig, data)
	}
}
