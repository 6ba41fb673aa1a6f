package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setup-host's summary counts each outcome once per step; a step without one (a
// note) is not counted.
func TestTally(t *testing.T) {
	n := Tally([]Step{{Object: "a", Outcome: Created}, {Object: "b", Outcome: Right}, {Object: "c", Outcome: Created}, {Object: "note"}})
	if n[Created] != 2 || n[Right] != 1 || n[Changed] != 0 || len(n) != 2 {
		t.Errorf("tally: %v", n)
	}
}

// The boot unit's binary is this one, its symlinks resolved.
func TestExe(t *testing.T) {
	exe := Exe()
	if !filepath.IsAbs(exe) {
		t.Fatalf("Exe = %q", exe)
	}
	if r, err := filepath.EvalSymlinks(exe); err != nil || r != exe {
		t.Errorf("Exe %q resolves to %q (%v)", exe, r, err)
	}
}

// setup-userns names the binary a link leads to, not the link, in the profile it loads;
// a link out of the root loads nothing.
func TestUsernsSetup(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr/libexec", "usr/bin", "etc/apparmor.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "usr/libexec/bwrap"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../libexec/bwrap", filepath.Join(root, "usr/bin/bwrap")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/bwrap", filepath.Join(root, "usr/bin/away")); err != nil {
		t.Fatal(err)
	}
	var loaded []string
	u := Userns{Root: root, AppArmor: true, Load: func(f string) error { b, _ := os.ReadFile(f); loaded = append(loaded, string(b)); return nil }}
	if s, err := u.Setup("/usr/bin/bwrap"); err != nil || s.Outcome != Created {
		t.Fatalf("setup: %v %v", s, err)
	}
	if len(loaded) != 1 || !strings.Contains(loaded[0], "/usr/libexec/bwrap") || strings.Contains(loaded[0], "/usr/bin/bwrap") {
		t.Errorf("loaded %q: want the profile of /usr/libexec/bwrap", loaded)
	}
	if _, err := u.Setup("/usr/bin/away"); err == nil || len(loaded) != 1 {
		t.Errorf("a dangling link: %v, %d loads", err, len(loaded))
	}
}

// setup-host's resolvers: IPv4 addresses in order; a name or an IPv6 address is refused
// by its text.
func TestParseResolvers(t *testing.T) {
	got, err := ParseResolvers([]string{"9.9.9.9", "1.1.1.1"})
	if err != nil || len(got) != 2 || got[0].String() != "9.9.9.9" || got[1].String() != "1.1.1.1" {
		t.Errorf("resolvers: %v %v", got, err)
	}
	for _, bad := range []string{"nope", "2001:db8::1"} {
		if got, err := ParseResolvers([]string{"9.9.9.9", bad}); err == nil || got != nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("%s: %v %v", bad, got, err)
		}
	}
}

// setup-host needs root for this machine's stack only; a remote's is built through its
// incusd.
func TestCheckRoot(t *testing.T) {
	for _, c := range []struct {
		remote string
		euid   int
		want   error
	}{{"", 0, nil}, {"", 1000, ErrNotRoot}, {"lab", 1000, nil}, {"lab", 0, nil}} {
		if got := CheckRoot(c.remote, c.euid); got != c.want {
			t.Errorf("CheckRoot(%q, %d) = %v, want %v", c.remote, c.euid, got, c.want)
		}
	}
}
