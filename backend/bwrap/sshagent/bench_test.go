package sshagent

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// BenchmarkLsRemote is git ls-remote over SSH (the real git and ssh, an in-process SSH
// server reached through a ProxyCommand) authenticated by the real ssh-agent directly
// ("raw") and through box's filter ("filter"): the filter's cost is the ratio of the two.
func BenchmarkLsRemote(b *testing.B) {
	for _, via := range []string{"raw", "filter"} {
		b.Run(via, func(b *testing.B) {
			dir := b.TempDir()
			forge := startServer(b, dir, "forge")
			forge.repo = bareRepo(b, dir)
			l := newLab(b, Policy{Hosts: []Host{{Name: "forge", Keys: []ssh.PublicKey{forge.hostKey}}}})
			kh := filepath.Join(dir, "known_hosts")
			os.WriteFile(kh, KnownHosts(l.filter.Policy.Hosts), 0o600)
			sock := l.filterSock
			if via == "raw" {
				sock = l.hostSock
			}
			self, _ := os.Executable()
			gitSSH := strings.Join([]string{"ssh", "-F", "/dev/null", "-o", "ProxyCommand=" + self,
				"-o", "UserKnownHostsFile=" + kh, "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
				"-o", "BatchMode=yes", "-o", "IdentityAgent=" + sock, "-o", "IdentityFile=none"}, " ")
			env := append(os.Environ(), "GIT_SSH_COMMAND="+gitSSH, "BOX_SSHAGENT_TEST_PIPE="+forge.sock)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := exec.Command("git", "ls-remote", "ssh://me@forge/repo.git")
				c.Env = env
				if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "refs/heads/main") {
					b.Fatalf("ls-remote via %s: %v\n%s", via, err, out)
				}
			}
		})
	}
}

// bareRepo makes a bare repository with one commit on main.
func bareRepo(b testing.TB, dir string) string {
	work, bare := filepath.Join(dir, "work"), filepath.Join(dir, "repo.git")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "--allow-empty", "-m", "one"},
		{"clone", "-q", "--bare", work, bare},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return bare
}

// BenchmarkSign is one user-auth signature on a bound connection, asked of the real
// ssh-agent directly ("raw") and through the filter ("filter"): the filter's own cost
// without git's and ssh's process starts.
func BenchmarkSign(b *testing.B) {
	host, _ := newSigner(b)
	sid := []byte("0123456789abcdef0123456789abcdef")
	for _, via := range []string{"raw", "filter"} {
		b.Run(via, func(b *testing.B) {
			l := newLab(b, Policy{Hosts: []Host{{Name: "forge", Keys: []ssh.PublicKey{host.PublicKey()}}}})
			sock := l.filterSock
			if via == "raw" {
				sock = l.hostSock
			}
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			a := agent.NewClient(c)
			keys, err := a.List()
			if err != nil || len(keys) == 0 {
				b.Fatalf("list: %v", err)
			}
			var key ssh.PublicKey = keys[0]
			if via == "filter" {
				if _, err := a.Extension(sessionBindExt, bindMsg(b, host, sid, false)); err != nil {
					b.Fatal(err)
				}
			}
			data := authReq(sid, key, methodPublicKey, nil)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := a.Sign(key, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
