package bwrap_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/drill/lab"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/crypto/ssh"
)

// sshLab is the SSH side of the lab: a real ssh-agent of the test user holding two keys
// (one chosen by the profile), and two Debian sshd instances in the lab's internet
// namespace (the same address, two ports): the forge (:22) holding a bare git repository
// and prod (:2222). Both accept the chosen key for the test user.
type sshLab struct {
	agentSock           string
	chosenKey, otherFP  string
	chosenFP, chosenPub string
	forgeKey, prodKey   ssh.PublicKey
	repo                string
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

// waitLine starts c and waits until its output (r) prints a line containing want.
func waitLine(t *testing.T, r io.Reader, want string) {
	t.Helper()
	br := bufio.NewReader(r)
	var seen strings.Builder
	for {
		line, err := br.ReadString('\n')
		seen.WriteString(line)
		if strings.Contains(line, want) {
			go io.Copy(io.Discard, br)
			return
		}
		if err != nil {
			t.Fatalf("never printed %q:\n%s", want, seen.String())
		}
	}
}

// sshWorld is the SSH tests' world: the lab, a planted world, and the ssh lab in it,
// box's SSH_AUTH_SOCK the lab's agent. It needs the ssh tools and the others named.
func sshWorld(t *testing.T, tools ...string) (*world, *lab.Lab, *sshLab) {
	t.Helper()
	boxtest.RequireLab(t)
	for _, tool := range append([]string{"ssh", "ssh-agent", "ssh-add", "ssh-keygen", "git"}, tools...) {
		testenv.RequireTool(t, tool)
	}
	w := newWorld(t)
	l := lab.New(t)
	s := newSSHLab(t, w, l)
	w.env = append(boxtest.EnvWithout(w.env, "SSH_AUTH_SOCK"), "SSH_AUTH_SOCK="+s.agentSock)
	return w, l, s
}

func newSSHLab(t *testing.T, w *world, l *lab.Lab) *sshLab {
	t.Helper()
	s := &sshLab{}
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
	waitLine(t, out, "SSH_AUTH_SOCK")
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

	// Debian's sshd, twice, as root in the lab's internet namespace.
	srv := filepath.Join(dir, "sshd")
	os.MkdirAll(srv, 0o755)
	os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	auth := filepath.Join(srv, "authorized_keys")
	os.WriteFile(auth, []byte(s.chosenPub+"\n"), 0o644)
	var kh strings.Builder
	for _, h := range []struct {
		name, listen, known string
		key                 *ssh.PublicKey
	}{{"forge", forgeHost + ":22", forgeHost, &s.forgeKey}, {"prod", prodHost, "[" + forgeHost + "]:2222", &s.prodKey}} {
		hk := filepath.Join(srv, h.name+"_host")
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hk).CombinedOutput(); err != nil {
			t.Fatalf("host key: %v %s", err, out)
		}
		b, _ := os.ReadFile(hk + ".pub")
		k, _, _, _, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			t.Fatal(err)
		}
		*h.key = k
		fmt.Fprintf(&kh, "%s %s\n", h.known, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))))
		cfg := filepath.Join(srv, h.name+".conf")
		os.WriteFile(cfg, []byte(fmt.Sprintf("ListenAddress %s\nHostKey %s\nAuthorizedKeysFile %s\nStrictModes no\nPidFile none\nUsePAM yes\n"+
			"PasswordAuthentication no\nKbdInteractiveAuthentication no\nAllowAgentForwarding yes\nAllowUsers %s\n",
			h.listen, hk, auth, testenv.UserName)), 0o644)
		d := l.Command(context.Background(), lab.RoleInet, "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
		errOut, _ := d.StderrPipe()
		if err := l.StartProc(d); err != nil {
			t.Fatal(err)
		}
		waitLine(t, errOut, "Server listening on")
	}
	// The user has connected to both before: known_hosts holds both keys (prod's too,
	// so it is the agent, not host key checking, that keeps the sandbox out of prod).
	w.write(filepath.Join(w.home, ".ssh", "known_hosts"), kh.String())

	s.repo = filepath.Join(dir, "forge.git")
	mustUser(t, asUser(w, "git", "init", "-q", "--bare", "-b", "main", s.repo))
	return s
}

// TestSSHAgentFilter: from a real sandbox (tier full, in the lab) as the unprivileged
// user, against Debian's sshd: git push to the allowed forge works through box's filter;
// ssh to prod with the same key (prod's key trusted, host key checking bypassed) is
// refused by the filter and logged; ssh -A to the forge, then ssh onward from there to
// prod, gets no signature (the forwarded agent still lists the key); ssh-add -L lists only the chosen key; ssh-add -D and adding a key are
// refused; a commit signed inside (gpg.format=ssh) verifies on the host; the private key
// file and the host's agent socket are unreachable inside.
func TestSSHAgentFilter(t *testing.T) {
	w, l, s := sshWorld(t)
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
git push -q ssh://%[5]s@%[4]s%[6]s main 2>&1; echo "push=$?"
ssh -F /run/box/ssh/config -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes %[5]s@%[4]s echo prod-in 2>/dev/null; echo "prod=$?"
ssh -F /run/box/ssh/config -A -o BatchMode=yes %[5]s@%[4]s 'ssh-add -l >/dev/null && echo forwarded-agent-lists; ssh -F /dev/null -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes %[4]s echo onward-in 2>/dev/null; echo "onward=$?"'
`, s.chosenKey, s.agentSock, s.chosenPub, forgeHost, testenv.UserName, s.repo)
	// The operator's repository, made on the host (one made inside would go to the
	// post-run audit's quarantine).
	mustUser(t, func() *exec.Cmd { c := asUser(w, "git", "init", "-q", "-b", "main", "."); c.Dir = w.proj; return c }())
	r := w.pub().InLab(l, nil, "run", "-y", "-p", "push", "--", "sh", "-c", script)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	for _, want := range []string{"delete=1", "add=1", "keyfile=1", "hostsock=1", "hostagent=", "commit=0", "push=0", "prod=255", "forwarded-agent-lists", "onward=255"} {
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
	for _, leak := range []string{"prod-in", "onward-in"} {
		if strings.Contains(r.Stdout, leak) {
			t.Errorf("%s: a login the filter should have refused", leak)
		}
	}
	if !strings.Contains(r.Stderr, "box: ssh agent: ") {
		t.Errorf("no summary line:\n%s", r.Stderr)
	}

	// The push landed, and the signed commit verifies on the host.
	verify := asUser(w, "git", "-C", s.repo, "-c", "gpg.ssh.allowedSignersFile="+filepath.Join(w.home, "allowed_signers"), "verify-commit", "main")
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
		case rec.Op == "sign" && !rec.Allowed && strings.HasPrefix(rec.Reason, "forwarded"):
			fwdRefused = true
		case rec.Op == "sign" && !rec.Allowed && strings.Contains(rec.Host, ssh.FingerprintSHA256(s.prodKey)) && strings.Contains(rec.Reason, "not one of an allowed host's"):
			prodRefused = true
		case rec.Op == "sign-git" && rec.Allowed:
			gitSig = true
		}
	}
	if !forgeOK || !prodRefused || !fwdRefused || !gitSig {
		t.Errorf("log: forge signed %v, prod refused %v, forwarded refused %v, git signature %v:\n%s", forgeOK, prodRefused, fwdRefused, gitSig, data)
	}
}

// TestSSHAgentFilterOff: the same sandbox with the filter switched off (test build,
// BOX_UNSAFE_OFF=ssh-agent: the sandbox's socket relays the host's agent, as forwarding
// the raw socket would) logs in to prod and onward through ssh -A: the refusals of
// TestSSHAgentFilter are the filter's doing.
func TestSSHAgentFilterOff(t *testing.T) {
	w, l, s := sshWorld(t)
	w.withProtectionOff(t, bwrap.ProtSSHAgent)
	w.write(filepath.Join(w.home, ".config", "box", "profiles", "push.toml"),
		fmt.Sprintf("network = \"full\"\nssh = { hosts = [%q], keys = [%q] }\n", forgeHost, s.chosenFP))
	script := fmt.Sprintf(`ssh-add -l | grep -c ED25519
ssh -F /run/box/ssh/config -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes %[2]s@%[1]s echo prod-in 2>/dev/null
ssh -F /run/box/ssh/config -A -o BatchMode=yes %[2]s@%[1]s 'ssh -F /dev/null -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes %[1]s echo onward-in 2>/dev/null'
`, forgeHost, testenv.UserName)
	r := w.pub().InLab(l, nil, "run", "-y", "-p", "push", "--", "sh", "-c", script)
	for _, breach := range []string{"2\n", "prod-in", "onward-in"} {
		if !strings.Contains(r.Stdout, breach) {
			t.Errorf("with the filter off, %q should show (BREACH):\nstdout:\n%s\nstderr:\n%s", breach, r.Stdout, r.Stderr)
		}
	}
}
