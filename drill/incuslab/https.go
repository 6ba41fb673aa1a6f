package incuslab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ListenHTTPS has incusd listen on HTTPS on addr, IP:PORT (an address the lab's
// namespace has: its end of Link), as a remote does (core.https_address).
func (l *Lab) ListenHTTPS(ctx context.Context, addr string) error {
	if err := l.Client.Query(ctx, "PATCH", "", map[string]any{"config": map[string]string{"core.https_address": addr}}, nil); err != nil {
		return fmt.Errorf("lab %s: core.https_address=%s: %w", l.Name, addr, err)
	}
	l.HTTPSAddress = addr
	return nil
}

// Link joins this lab's network namespace and peer's with a veth pair, addr on this
// side and peerAddr on the peer's (CIDRs on one subnet, documentation or private
// ranges): the two daemons, and box run in either namespace, reach each other, and
// nothing else. The pair goes with the namespaces.
func (l *Lab) Link(ctx context.Context, peer *Lab, addr, peerAddr string) error {
	a, b := "bx"+suffix(l.Name)+"a", "bx"+suffix(l.Name)+"b"
	steps := [][]string{
		{"ip", "-n", nsName(l.NetNS), "link", "add", a, "type", "veth", "peer", "name", b, "netns", nsName(peer.NetNS)},
		{"ip", "-n", nsName(l.NetNS), "addr", "add", addr, "dev", a},
		{"ip", "-n", nsName(peer.NetNS), "addr", "add", peerAddr, "dev", b},
		{"ip", "-n", nsName(l.NetNS), "link", "set", a, "up"},
		{"ip", "-n", nsName(peer.NetNS), "link", "set", b, "up"},
	}
	for _, s := range steps {
		if out, err := exec.CommandContext(ctx, s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("link %s and %s: %v: %v: %s", l.Name, peer.Name, s, err, out)
		}
	}
	return nil
}

// suffix is the lab name's pid-n part without dashes, short enough for an interface
// name (15 bytes).
func suffix(name string) string {
	s := strings.ReplaceAll(strings.TrimPrefix(name, prefix), "-", "")
	if len(s) > 11 {
		s = s[len(s)-11:]
	}
	return s
}

func nsName(path string) string { return filepath.Base(path) }

// ServerCertPEM is the daemon's server certificate (what the incus client accepts
// into servercerts/ on 'incus remote add').
func (l *Lab) ServerCertPEM() ([]byte, error) {
	return os.ReadFile(filepath.Join(l.IncusDir, "server.crt"))
}

// InNetNS returns cmd run in the lab's network namespace (nsenter), where the HTTPS
// address is reachable.
func (l *Lab) InNetNS(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + l.NetNS, "--", name}, args...)...)
}
