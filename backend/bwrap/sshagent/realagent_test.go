package sshagent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/fdfill"
	"github.com/heavy-duty/box/internal/testenv"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/unix"
)

// TestMain doubles as the ssh client's ProxyCommand: with BOX_SSHAGENT_TEST_PIPE set the
// test binary copies stdin/stdout to that unix socket, so the real ssh client reaches the
// test's server without any network.
func TestMain(m *testing.M) {
	if p := os.Getenv("BOX_SSHAGENT_TEST_PIPE"); p != "" {
		c, err := net.Dial("unix", p)
		if err != nil {
			os.Exit(2)
		}
		go func() { io.Copy(c, os.Stdin); c.(*net.UnixConn).CloseWrite() }()
		io.Copy(os.Stdout, c)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// lab is a real ssh-agent holding two keys (one chosen), and box's filter in front.
type lab struct {
	dir               string
	hostSock          string // the real agent
	filterSock        string // the filter
	chosen, other     string // private key paths
	chosenFP, otherFP string
	log               *syncBuf
	filter            *Filter
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) records(t *testing.T) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Record
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

func run(t testing.TB, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	out, err := run(t, env, name, args...)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return out
}

func keygen(t testing.TB, dir, name string) (path, fp string) {
	t.Helper()
	path = filepath.Join(dir, name)
	mustRun(t, nil, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path)
	out := mustRun(t, nil, "ssh-keygen", "-l", "-E", "sha256", "-f", path+".pub")
	return path, strings.Fields(out)[1]
}

// startAgent starts a real ssh-agent in the foreground and waits for the line it prints
// once its socket listens.
func startAgent(t testing.TB, sock string) {
	t.Helper()
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "SSH_AUTH_SOCK") {
		t.Fatalf("ssh-agent did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
}

func newLab(t testing.TB, p Policy) *lab {
	t.Helper()
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen", "ssh"} {
		testenv.RequireTool(t, tool)
	}
	dir, err := os.MkdirTemp("", "sshagent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l := &lab{dir: dir, hostSock: filepath.Join(dir, "host.sock"), filterSock: filepath.Join(dir, "filter.sock"), log: &syncBuf{}}
	startAgent(t, l.hostSock)
	l.chosen, l.chosenFP = keygen(t, dir, "chosen")
	l.other, l.otherFP = keygen(t, dir, "other")
	env := []string{"SSH_AUTH_SOCK=" + l.hostSock}
	mustRun(t, env, "ssh-add", l.chosen, l.other)
	if p.Keys == nil {
		p.Keys = []string{l.chosenFP}
	}
	l.filter = &Filter{Policy: p, Log: l.log, Dial: func() (net.Conn, error) { return net.Dial("unix", l.hostSock) }}
	ln, err := net.Listen("unix", l.filterSock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.filter.Serve(ln) }()
	t.Cleanup(func() {
		l.filter.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return l
}

func (l *lab) env() []string { return []string{"SSH_AUTH_SOCK=" + l.filterSock} }

func TestRealSSHAddListsOnlyChosen(t *testing.T) {
	for _, by := range []string{"fingerprint", "comment"} {
		t.Run(by, func(t *testing.T) {
			var p Policy
			if by == "comment" {
				p.Keys = []string{"chosen"}
			}
			l := newLab(t, p)
			out := mustRun(t, l.env(), "ssh-add", "-l", "-E", "sha256")
			if !strings.Contains(out, l.chosenFP) || strings.Contains(out, l.otherFP) {
				t.Fatalf("ssh-add -l through the filter: %s", out)
			}
			raw := mustRun(t, []string{"SSH_AUTH_SOCK=" + l.hostSock}, "ssh-add", "-l", "-E", "sha256")
			if !strings.Contains(raw, l.otherFP) {
				t.Fatalf("the host agent should hold both keys: %s", raw)
			}
		})
	}
}

func TestRealSSHAddChangesRefused(t *testing.T) {
	l := newLab(t, Policy{})
	extra, _ := keygen(t, l.dir, "extra")
	for _, args := range [][]string{{"-D"}, {extra}, {"-d", l.chosen + ".pub"}} {
		if out, err := run(t, l.env(), "ssh-add", args...); err == nil {
			t.Errorf("ssh-add %v through the filter succeeded: %s", args, out)
		}
	}
	// ssh-add -x / -X read a passphrase from a terminal; the protocol's lock is sent
	// by the Go client instead.
	raw := mustRun(t, []string{"SSH_AUTH_SOCK=" + l.hostSock}, "ssh-add", "-l")
	if strings.Count(raw, "\n") != 2 {
		t.Fatalf("the host agent changed: %s", raw)
	}
	ops := map[string]bool{}
	for _, r := range l.log.records(t) {
		if !r.Allowed && r.Reason == reasonChange {
			ops[r.Op] = true
		}
	}
	for _, op := range []string{"remove-all", "add", "remove"} {
		if !ops[op] {
			t.Errorf("no refusal of %s logged: %v", op, l.log.records(t))
		}
	}
}

// pubOnly copies a key's public half away from its private file, which ssh-keygen would
// otherwise use itself instead of the agent.
func pubOnly(t testing.TB, key string) string {
	t.Helper()
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, filepath.Base(key)+".pub")
	if err := os.WriteFile(p, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRealGitSignature(t *testing.T) {
	for _, tc := range []struct {
		name string
		sign bool
		ns   string
		ok   bool
	}{
		{"git", true, "git", true},
		{"signing off", false, "git", false},
		{"other namespace", true, "file", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t, Policy{Sign: tc.sign})
			msg := filepath.Join(l.dir, "msg")
			os.WriteFile(msg, []byte("tree 0000\n"), 0o600)
			out, err := run(t, l.env(), "ssh-keygen", "-Y", "sign", "-n", tc.ns, "-f", pubOnly(t, l.chosen), msg)
			if (err == nil) != tc.ok {
				t.Fatalf("ssh-keygen -Y sign -n %s: err %v, want ok=%v\n%s", tc.ns, err, tc.ok, out)
			}
			if !tc.ok {
				return
			}
			pub, _ := os.ReadFile(l.chosen + ".pub")
			signers := filepath.Join(l.dir, "allowed_signers")
			os.WriteFile(signers, []byte("me@example.org "+string(pub)), 0o600)
			cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me@example.org", "-n", "git", "-s", msg+".sig")
			cmd.Stdin = strings.NewReader("tree 0000\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("verify: %v\n%s", err, out)
			}
		})
	}
	t.Run("not chosen key", func(t *testing.T) {
		l := newLab(t, Policy{Sign: true})
		msg := filepath.Join(l.dir, "msg")
		os.WriteFile(msg, []byte("x"), 0o600)
		if out, err := run(t, l.env(), "ssh-keygen", "-Y", "sign", "-n", "git", "-f", pubOnly(t, l.other), msg); err == nil {
			t.Fatalf("signed with a key not chosen: %s", out)
		}
	})
}

// sshServer is an in-process SSH server (x/crypto/ssh) on a unix socket: it accepts the
// chosen key and runs no command but answers exec with status 0.
type sshServer struct {
	sock    string
	hostKey ssh.PublicKey
	// repo, when set, is served to git-upload-pack (the benchmark's ls-remote).
	repo string
}

func startServer(t testing.TB, dir, name string) *sshServer {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil },
	}
	cfg.AddHostKey(signer)
	s := &sshServer{sock: filepath.Join(dir, name+".sock"), hostKey: signer.PublicKey()}
	ln, err := net.Listen("unix", s.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(c, cfg, s)
		}
	}()
	return s
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig, s *sshServer) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			for r := range creqs {
				r.Reply(r.Type == "exec", nil)
				if r.Type == "exec" {
					var code uint32
					var m struct{ Cmd string }
					ssh.Unmarshal(r.Payload, &m)
					if s.repo != "" && strings.HasPrefix(m.Cmd, "git-upload-pack ") {
						g := exec.Command("git", "upload-pack", s.repo)
						g.Stdin, g.Stdout, g.Stderr = ch, ch, ch.Stderr()
						if g.Run() != nil {
							code = 1
						}
					}
					ch.SendRequest("exit-status", false, ssh.Marshal(struct{ S uint32 }{code}))
					ch.Close()
				}
			}
		}()
	}
}

// sshTo runs the real ssh client against a test server, strict host keys from kh.
func (l *lab) sshTo(t *testing.T, s *sshServer, kh string) (string, error) {
	t.Helper()
	self, _ := os.Executable()
	return run(t, append(l.env(), "BOX_SSHAGENT_TEST_PIPE="+s.sock), "ssh", "-F", "/dev/null",
		"-o", "ProxyCommand="+self,
		"-o", "UserKnownHostsFile="+kh, "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"-o", "IdentityAgent="+l.filterSock, "-o", "IdentityFile=none",
		"-o", "PreferredAuthentications=publickey",
		"me@"+filepath.Base(strings.TrimSuffix(s.sock, ".sock")), "true")
}

// TestRealSSHClientBound: the real OpenSSH client authenticates to the allowed host (its
// session-bind verified) and not to another host, even one whose key it trusts.
func TestRealSSHClientBound(t *testing.T) {
	dir, _ := os.MkdirTemp("", "sshsrv")
	t.Cleanup(func() { os.RemoveAll(dir) })
	forge := startServer(t, dir, "forge")
	prod := startServer(t, dir, "prod")
	l := newLab(t, Policy{Hosts: []Host{{Name: "forge", Keys: []ssh.PublicKey{forge.hostKey}}}})
	kh := filepath.Join(dir, "known_hosts")
	// Both hosts known to the client: the agent, not host key checking, refuses prod.
	os.WriteFile(kh, append(KnownHosts(l.filter.Policy.Hosts), KnownHosts([]Host{{Name: "prod", Keys: []ssh.PublicKey{prod.hostKey}}})...), 0o600)

	if out, err := l.sshTo(t, forge, kh); err != nil {
		t.Fatalf("ssh forge through the filter: %v\n%s", err, out)
	}
	if out, err := l.sshTo(t, prod, kh); err == nil {
		t.Fatalf("ssh prod through the filter succeeded:\n%s", out)
	}
	var okForge, refusedProd bool
	for _, r := range l.log.records(t) {
		if r.Op == "sign" && r.Allowed && r.Host == "forge" && r.Key == l.chosenFP {
			okForge = true
		}
		if r.Op == "sign" && !r.Allowed && r.Reason == reasonHost && strings.Contains(r.Host, Fingerprint(prod.hostKey)) {
			refusedProd = true
		}
	}
	if !okForge || !refusedProd {
		t.Fatalf("log: forge signed %v, prod refused %v: %+v", okForge, refusedProd, l.log.records(t))
	}
	if s, r := l.filter.Counts(); s != 1 || r < 1 {
		t.Fatalf("counts %d signed %d refused", s, r)
	}
}

// A sandbox holding many connections open (each answered once, so each holds one to the
// host's agent) cannot starve the host's agent: past MaxConns the filter closes new
// connections at once, and the host's agent still answers the operator. Without the
// bound, a thousand held connections left the operator's ssh-add -l waiting (a hostile
// review).
func TestRealConnectionsBounded(t *testing.T) {
	l := newLab(t, Policy{Sign: true})
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for i := 0; i < MaxConns; i++ {
		c, err := net.Dial("unix", l.filterSock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if _, err := agent.NewClient(c).List(); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	c, err := net.Dial("unix", l.filterSock)
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, c)
	if keys, err := agent.NewClient(c).List(); err == nil {
		t.Fatalf("connection %d past the bound was served (%d keys)", MaxConns+1, len(keys))
	}
	refused := false
	for _, r := range l.log.records(t) {
		if r.Op == "connect" && !r.Allowed && r.Reason == reasonConns {
			refused = true
		}
	}
	if !refused {
		t.Errorf("the refused connection is not logged: %v", l.log.records(t))
	}
	if out, err := run(t, []string{"SSH_AUTH_SOCK=" + l.hostSock}, "ssh-add", "-l"); err != nil {
		t.Errorf("the host's agent does not answer the operator: %v\n%s", err, out)
	}
}

// An accept that fails for want of descriptors (box's other doors flooded by the
// sandbox) does not end the filter: it says so in the log, backs off, and serves the
// next connection once descriptors are back. Before, Serve returned on EMFILE and every
// later ssh in the sandbox hung (a hostile review). The process's descriptors are run
// out for real (internal/fdfill); the client is a real ssh-add in another process.
func TestRealAcceptSurvivesEMFILE(t *testing.T) {
	l := newLab(t, Policy{Sign: true})
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `read x < "$1" && exec ssh-add -l`, "sh", fifo)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+l.filterSock)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // sh has it open for reading
	if err != nil {
		t.Fatal(err)
	}
	release := fdfill.Fill(t)
	w.Write([]byte("go\n"))
	defer w.Close() // not before release: closing it would give a descriptor back
	exhausted := func() bool {
		for _, r := range l.log.records(t) {
			if r.Op == "accept" && !r.Allowed && r.Reason == reasonExhausted {
				return true
			}
		}
		return false
	}
	for !exhausted() {
		if ctx.Err() != nil {
			release()
			t.Fatalf("the filter never reported the accept it could not make: %v", l.log.records(t))
		}
		time.Sleep(10 * time.Millisecond) // waiting for the condition above, not a delay
	}
	release()
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out.String(), "no identities") {
			t.Fatalf("ssh-add -l through the filter after the exhaustion: %v\n%s\nlog: %v", err, out.String(), l.log.records(t))
		}
	}
}

// Close ends the run's filter even while the host's agent holds a request the sandbox
// made: an agent that asks its user first (a key added with ssh-add -c, a desktop
// password manager's approval, gpg-agent's pinentry, a forwarded agent whose link
// stalled) answers when it answers, and before, Close closed the sandbox's connections
// but waited on the one to the host's agent, so box did not exit until someone answered
// a prompt for a sandbox that was gone (a hostile review). The agent here is a real
// ssh-agent whose chosen key needs confirmation, and whose askpass waits until the test
// has seen Close return.
func TestRealCloseWhileHostAgentAsks(t *testing.T) {
	for _, tool := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		testenv.RequireTool(t, tool)
	}
	dir := t.TempDir()
	hostSock, filterSock := filepath.Join(dir, "host.sock"), filepath.Join(dir, "filter.sock")
	asked, answer := filepath.Join(dir, "asked"), filepath.Join(dir, "answer")
	if err := unix.Mkfifo(answer, 0o600); err != nil {
		t.Fatal(err)
	}
	askpass := filepath.Join(dir, "askpass")
	script := "#!/bin/sh\n: > '" + asked + "'\nread x < '" + answer + "'\necho yes\n"
	if err := os.WriteFile(askpass, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ssh-agent", "-D", "-a", hostSock)
	cmd.Env = append(os.Environ(), "SSH_ASKPASS="+askpass, "SSH_ASKPASS_REQUIRE=force", "DISPLAY=:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, "SSH_AUTH_SOCK") {
		t.Fatalf("ssh-agent did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
	key, fp := keygen(t, dir, "chosen")
	mustRun(t, []string{"SSH_AUTH_SOCK=" + hostSock}, "ssh-add", "-c", key)

	lg := &syncBuf{}
	f := &Filter{Policy: Policy{Keys: []string{fp}, Sign: true}, Log: lg, Dial: func() (net.Conn, error) { return net.Dial("unix", hostSock) }}
	ln, err := net.Listen("unix", filterSock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- f.Serve(ln) }()

	c, err := net.Dial("unix", filterSock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys, err := agent.NewClient(c).List()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the chosen key is not listed: %v %v", keys, err)
	}
	data := append([]byte(sshsigMagic), ssh.Marshal(sshsig{Namespace: sshsigNamespace, HashAlg: "sha512", Hash: make([]byte, 64)})...)
	signed := make(chan error, 1)
	go func() { _, err := agent.NewClient(c).Sign(keys[0], data); signed <- err }()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The answer is given only at the end, whatever happens, so the agent never stays
	// blocked past the test.
	defer func() {
		if w, err := os.OpenFile(answer, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			w.Write([]byte("\n"))
			w.Close()
		}
	}()
	for {
		if _, err := os.Stat(asked); err == nil {
			break
		}
		select {
		case err := <-signed:
			t.Fatalf("the signature was answered without the agent asking its user: %v (log %v)", err, lg.records(t))
		case <-ctx.Done():
			t.Fatalf("the host's agent never asked for confirmation (log %v)", lg.records(t))
		case <-time.After(10 * time.Millisecond): // waiting for the condition above, not a delay
		}
	}
	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close waited for the host agent's answer to a request of a sandbox that was gone")
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := <-signed; err == nil {
		t.Error("the sandbox's signature request was answered after Close")
	}
}
