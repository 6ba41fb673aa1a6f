package incuslab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// listenHTTPS puts addr's host on the lab namespace's loopback and has incusd listen
// there (core.https_address).
func (l *Lab) listenHTTPS(ctx context.Context, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) == nil {
		return fmt.Errorf("HTTPSAddress %q: want IP:PORT", addr)
	}
	out, err := exec.CommandContext(ctx, "nsenter", "--net="+l.NetNS, "ip", "addr", "add", host+"/32", "dev", "lo").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "File exists") {
		return fmt.Errorf("lab %s: address %s on lo: %v: %s", l.Name, host, err, out)
	}
	if err := l.Client.Query(ctx, "PATCH", "", map[string]any{"config": map[string]string{"core.https_address": addr}}, nil); err != nil {
		return fmt.Errorf("lab %s: core.https_address=%s: %w", l.Name, addr, err)
	}
	l.HTTPSAddress = addr
	return nil
}

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
