package sshagent

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeys finds each allowed host's keys: the profile's host_keys lines (known_hosts
// format, each naming an allowed host) and the given known_hosts files (hashed entries,
// [host]:port entries and @revoked markers as OpenSSH reads them; a file that does not
// exist is skipped, one that cannot be read or parsed is an error). A host with no key is
// an error: no session to it could be verified, and box says so before the run rather
// than refusing every push.
func HostKeys(hosts []string, files []string, lines []string) ([]Host, error) {
	out := make([]Host, len(hosts))
	for i, h := range hosts {
		if err := CheckHost(h); err != nil {
			return nil, err
		}
		out[i].Name = h
	}
	for _, line := range lines {
		if err := addLine(out, line); err != nil {
			return nil, err
		}
	}
	var present []string
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
			continue
		}
		present = append(present, f)
	}
	if len(present) > 0 {
		check, err := knownhosts.New(present...)
		if err != nil {
			return nil, err
		}
		probe, err := probeKey()
		if err != nil {
			return nil, err
		}
		for i := range out {
			name, port := HostPort(out[i].Name)
			addr := net.JoinHostPort(name, strconv.Itoa(port))
			remote := &net.TCPAddr{IP: net.IPv4zero, Port: port}
			// A key no file can hold: the answer lists every key the files hold for
			// the host (hashed and plain entries alike).
			var ke *knownhosts.KeyError
			if err := check(addr, remote, probe); !errors.As(err, &ke) {
				continue
			}
			for _, k := range ke.Want {
				// Asked again per key so a key the files mark @revoked is dropped.
				if check(addr, remote, k.Key) == nil {
					out[i].Keys = appendKey(out[i].Keys, k.Key)
				}
			}
		}
	}
	for _, h := range out {
		if len(h.Keys) == 0 {
			return nil, &HostError{Host: h.Name, Err: ErrNoHostKey}
		}
	}
	return out, nil
}

func addLine(hosts []Host, line string) error {
	marker, names, key, _, _, err := ssh.ParseKnownHosts([]byte(line))
	if err != nil || marker != "" || len(names) == 0 {
		return &HostError{Host: line, Err: ErrHostKeyLine}
	}
	for _, n := range names {
		found := false
		for i := range hosts {
			if knownhosts.Normalize(n) == hosts[i].Addr() {
				hosts[i].Keys = appendKey(hosts[i].Keys, key)
				found = true
			}
		}
		if !found {
			return &HostError{Host: n, Err: ErrHostKeyLine}
		}
	}
	return nil
}

func appendKey(keys []ssh.PublicKey, k ssh.PublicKey) []ssh.PublicKey {
	for _, have := range keys {
		if string(have.Marshal()) == string(k.Marshal()) {
			return keys
		}
	}
	return append(keys, k)
}

func probeKey() (ssh.PublicKey, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
}

// KnownHosts renders the sandbox's known_hosts: the allowed hosts' keys only.
func KnownHosts(hosts []Host) []byte {
	var b strings.Builder
	for _, h := range hosts {
		for _, k := range h.Keys {
			b.WriteString(knownhosts.Line([]string{h.Name}, k))
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// Config renders the sandbox's ssh config: host keys only from the sandbox's known_hosts,
// checked strictly (no prompt an agent would answer yes to), never updated by the server.
func Config(knownHostsPath, agentSock string) []byte {
	return []byte("# written by box: see SANDBOX.md\n" +
		"Host *\n" +
		"\tStrictHostKeyChecking yes\n" +
		"\tUserKnownHostsFile " + knownHostsPath + "\n" +
		"\tGlobalKnownHostsFile /dev/null\n" +
		"\tUpdateHostKeys no\n" +
		"\tIdentityAgent " + agentSock + "\n" +
		"\tForwardAgent no\n")
}
