package bwrap

import (
	"strings"
	"testing"
)

func TestStorePathName(t *testing.T) {
	for n, want := range map[string]bool{
		"n7mdwkky81cw613qh4080q3svcsmiz99-source":      true,
		"7pzw4rs97vhvq3jkf1r6flyw9k47g6sj-x.drv":       true,
		"n7mdwkky81cw613qh4080q3svcsmiz99-source.lock": false,
		".links": false, "n7mdwkky81cw613qh4080q3svcsmiz9e-x": false, "short": false,
	} {
		if storePathName(n) != want {
			t.Errorf("storePathName(%q) = %v", n, !want)
		}
	}
}

// The registration sandbox writes only the project's /nix/var; the host's store and
// system are read-only, and nothing of /etc or the operator's home is there.
func TestRegisterArgs(t *testing.T) {
	h := Host{System: []SysPath{{Path: "/usr"}, {Path: "/bin", Link: "usr/bin"}, {Path: "/etc"}, {Path: "/nix/store"}}}
	a := strings.Join(registerArgs(h, "/i/nix", "/usr/bin/nix-store"), " ")
	want := "--unshare-all --die-with-parent --new-session --cap-drop ALL --tmpfs / --ro-bind /usr /usr --symlink usr/bin /bin " +
		"--ro-bind-try /nix/store /nix/store --bind /i/nix/var /nix/var --dev /dev --proc /proc --tmpfs /tmp -- /usr/bin/nix-store --load-db"
	if a != want {
		t.Errorf("registerArgs:\n got %s\nwant %s", a, want)
	}
}
