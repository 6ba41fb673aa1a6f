package host

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

var updateProfile = flag.Bool("update-profile", false, "rewrite testdata/box-userns.apparmor from UsernsProfile")

const profileGolden = "testdata/box-userns.apparmor"

func TestUsernsProfileGolden(t *testing.T) {
	text, err := UsernsProfile("/usr/bin/bwrap")
	if err != nil {
		t.Fatal(err)
	}
	if *updateProfile {
		os.WriteFile(profileGolden, []byte(text), 0o644)
	}
	want, err := os.ReadFile(profileGolden)
	if err != nil || string(want) != text {
		t.Fatalf("profile differs from %s (go test ./host -run TestUsernsProfileGolden -update-profile):\n%s", profileGolden, text)
	}
	// Exactly one rule, for exactly one binary.
	if strings.Count(text, "userns,") != 1 || strings.Count(text, "profile ") != 1 || !strings.Contains(text, "profile box-userns /usr/bin/bwrap flags=(unconfined) {") {
		t.Errorf("profile grants something else:\n%s", text)
	}
}

// A path that AppArmor would read as a pattern, or not the binary itself, is refused.
func TestUsernsProfileRefusesPatterns(t *testing.T) {
	for _, p := range []string{"bwrap", "/usr/bin/*", "/usr/bin/bw{rap,x}", "/usr/bin/bw?ap", "/usr/bin/[b]wrap", "/usr/bin/../bin/bwrap",
		"/usr/bin/bwrap,", "/opt/my bwrap", "/usr/bin/bwrap\n  capability,", "/usr/bin/bwrap//", "/usr/bin/bwrap}"} {
		var pe *UsernsPathError
		if _, err := UsernsProfile(p); !errors.As(err, &pe) {
			t.Errorf("%q: got %v, want a UsernsPathError", p, err)
		}
	}
	if _, err := UsernsProfile("/nix/store/0abc-bubblewrap-0.11.0/bin/bwrap"); err != nil {
		t.Errorf("a nix store path: %v", err)
	}
}

// apparmorParser is an AppArmor 4 parser (Debian's, from scripts/test-deps.sh): Debian
// 12's own 3.0.8 predates the userns rule.
func apparmorParser(t *testing.T) []string {
	t.Helper()
	p := os.Getenv("BOX_APPARMOR_PARSER")
	if p == "" {
		p = "/opt/box-test/apparmor4/apparmor_parser"
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Skip(t, "requires an AppArmor 4 apparmor_parser at "+p+" (scripts/test-deps.sh)")
	}
	return []string{p}
}

// The profile compiles with Debian's apparmor_parser (-Q: no kernel load, -K: no cache),
// and the same parser refuses a broken one, so a pass means something.
func TestUsernsProfileCompiles(t *testing.T) {
	parser := apparmorParser(t)
	text, err := UsernsProfile("/usr/bin/bwrap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	compile := func(text string) (string, error) {
		f := filepath.Join(dir, "p")
		os.WriteFile(f, []byte(text), 0o644)
		out, err := exec.Command(parser[0], "-Q", "-K", f).CombinedOutput()
		return string(out), err
	}
	if out, err := compile(text); err != nil {
		t.Fatalf("apparmor_parser refused the profile: %v\n%s", err, out)
	}
	if out, err := compile(strings.Replace(text, "userns,", "userns, bogus_rule,", 1)); err == nil {
		t.Fatalf("apparmor_parser accepted a broken profile: %s", out)
	}
}

// Install and remove against a temporary root, with the loader recorded.
func TestUsernsInstallRemove(t *testing.T) {
	root := t.TempDir()
	var loaded, unloaded []string
	u := Userns{Root: root, AppArmor: true,
		Load:   func(f string) error { b, _ := os.ReadFile(f); loaded = append(loaded, string(b)); return nil },
		Unload: func(f string) error { unloaded = append(unloaded, f); return nil }}
	path := filepath.Join(root, "etc/apparmor.d/box-userns")
	for i, want := range []Outcome{Created, Right} {
		s, err := u.Install("/usr/bin/bwrap")
		if err != nil || s.Outcome != want {
			t.Fatalf("install %d: %v %v, want %v", i, s, err, want)
		}
	}
	if len(loaded) != 2 || !strings.Contains(loaded[1], "profile box-userns /usr/bin/bwrap ") {
		t.Fatalf("loads: %q", loaded)
	}
	if s, err := u.Install("/usr/local/bin/bwrap"); err != nil || s.Outcome != Changed {
		t.Fatalf("another bwrap: %v %v", s, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "profile box-userns /usr/local/bin/bwrap ") {
		t.Fatalf("file: %s", b)
	}
	// A profile the parser refuses leaves the installed one as it was.
	u.Load = func(string) error { return errors.New("refused") }
	if _, err := u.Install("/usr/bin/bwrap"); err == nil {
		t.Fatal("a refused load was not an error")
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "/usr/local/bin/bwrap") {
		t.Fatalf("a refused profile replaced the file: %s", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	for i, want := range []Outcome{Removed, Absent} {
		s, err := u.Remove()
		if err != nil || s.Outcome != want {
			t.Fatalf("remove %d: %v %v, want %v", i, s, err, want)
		}
	}
	if len(unloaded) != 1 || unloaded[0] != path {
		t.Fatalf("unloads: %q", unloaded)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the profile is still there")
	}
}

// Where AppArmor is absent (this machine's kernel) install refuses and writes nothing.
func TestUsernsNoAppArmor(t *testing.T) {
	root := t.TempDir()
	u := Userns{Root: root, Load: func(string) error { t.Fatal("loaded"); return nil }}
	if _, err := u.Install("/usr/bin/bwrap"); !errors.Is(err, ErrNoAppArmor) {
		t.Fatalf("got %v, want ErrNoAppArmor", err)
	}
	if _, err := os.Stat(u.ProfilePath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a profile was written")
	}
}

// Resolve names the binary a link under the root leads to, as seen from inside it, and
// refuses a link that leads out of the root.
func TestUsernsResolve(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "libexec")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../libexec/bwrap", filepath.Join(root, "usr", "bin", "bwrap")); err != nil {
		t.Fatal(err)
	}
	u := Userns{Root: root}
	got, err := u.Resolve("/usr/bin/bwrap")
	if err != nil || got != "/usr/libexec/bwrap" {
		t.Fatalf("Resolve = %q, %v; want /usr/libexec/bwrap", got, err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "bwrap"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "bwrap"), filepath.Join(root, "usr", "bin", "away")); err != nil {
		t.Fatal(err)
	}
	if got, err := u.Resolve("/usr/bin/away"); err == nil {
		t.Fatalf("Resolve of a link out of the root = %q, %v; want refused", got, err)
	}
	if _, err := u.Resolve("/usr/bin/missing"); err == nil {
		t.Fatal("Resolve of a missing binary: no error")
	}
}
