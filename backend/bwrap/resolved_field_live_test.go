package bwrap_test

// Field test (session 19): where /etc/resolv.conf is systemd-resolved's link into /run
// (../run/systemd/resolve/stub-resolv.conf: Ubuntu, Fedora, a Debian container with
// resolved), the tiers with a resolver of their own bound theirs at /etc/resolv.conf;
// bwrap followed the link into the sandbox's fresh /run and failed ("Can't create file
// at /etc/resolv.conf"), so tiers internet and allowlist never started there.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill/lab"
)

func TestSandboxResolvedStubHost(t *testing.T) {
	w, l := labWorld(t)
	d := t.TempDir()
	l.EtcUpper, l.EtcWork = filepath.Join(d, "upper"), filepath.Join(d, "work")
	for _, dir := range []string{l.EtcUpper, l.EtcWork} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l.ResolvedStub = "/run/systemd/resolve/stub-resolv.conf"
	if err := os.Symlink("../run/systemd/resolve/stub-resolv.conf", filepath.Join(l.EtcUpper, "resolv.conf")); err != nil {
		t.Fatal(err)
	}
	url := "http://" + lab.InternetName + "/"
	for _, c := range []struct{ tier, allow string }{{"internet", ""}, {"allowlist", lab.InternetName}} {
		t.Run(c.tier, func(t *testing.T) {
			args := []string{"run", "-y", "-q", "--network", c.tier}
			if c.allow != "" {
				args = append(args, "--allow", c.allow)
			}
			args = append(args, "--", "sh", "-c", "readlink /etc/resolv.conf; curl -sS --max-time 20 "+url)
			r := w.inLab(l, nil, args...)
			if r.code != 0 || !strings.Contains(r.stdout, strings.TrimSpace(lab.InternetBody)) {
				t.Fatalf("tier %s on a systemd-resolved host: exit %d\nstdout: %s\nstderr: %s", c.tier, r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "../run/systemd/resolve/stub-resolv.conf") {
				t.Errorf("the lab's /etc/resolv.conf was not the link: %s", r.stdout)
			}
		})
	}
}
