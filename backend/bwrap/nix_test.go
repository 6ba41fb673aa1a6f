package bwrap_test

// Nix in the sandbox, for real: a multi-user Nix host (a real nix-daemon), the profile's
// packages realised on the host and on PATH inside, a minimal PATH, and the daemon's
// socket absent unless the operator opts in.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// nixWorld is a planted world on a Nix host with a local flake of one package, fmt.
func nixWorld(t *testing.T) (*world, string) {
	t.Helper()
	testenv.NixDaemon(t)
	w := newWorld(t)
	flake := filepath.Join(filepath.Dir(w.home), "tools")
	w.write(filepath.Join(flake, "flake.nix"), `{
  outputs = { self }: {
    packages.x86_64-linux.fmt = derivation {
      name = "box-test-fmt"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin; printf '#!/bin/sh\\necho formatted by nix\\n' > $out/bin/fmt; /bin/chmod +x $out/bin/fmt" ];
    };
  };
}
`)
	return w, flake
}

func storeListing(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir("/nix/store")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, "\n")
}

func TestNixPackagesOnPath(t *testing.T) {
	w, flake := nixWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/tools.toml"), `packages = ["path:`+flake+`#fmt"]
`)
	r := w.run("run", "-y", "--profile", "tools", "--", "sh", "-c", `fmt; echo "PATH=$PATH"`)
	if r.code != 0 || !strings.Contains(r.stdout, "formatted by nix") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "/nix/store/") || !strings.Contains(r.stdout, ":/usr/bin") {
		t.Errorf("PATH lacks the package's bin or the system's: %s", r.stdout)
	}

	// Cached: a second launch evaluates nothing. Without nix on PATH it still works,
	// which it could not if it ran nix again.
	bin := filepath.Join(filepath.Dir(w.home), "bin-without-nix")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink(testenv.RequireTool(t, "bwrap"), filepath.Join(bin, "bwrap")); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "PATH="+bin)
	r = w.run("run", "-y", "--profile", "tools", "--", "fmt")
	if r.code != 0 || !strings.Contains(r.stdout, "formatted by nix") {
		t.Fatalf("cached launch: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// A changed profile evaluates again, and a failure names the installable and nix's
	// words.
	w.env = w.env[:len(w.env)-1]
	w.write(filepath.Join(w.home, ".config/box/profiles/tools.toml"), `packages = ["path:`+flake+`#nope"]
`)
	r = w.run("run", "-y", "--profile", "tools", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "nix build path:"+flake+"#nope failed") ||
		!strings.Contains(r.stderr, "does not provide attribute") || !strings.Contains(r.stderr, "box: hint:") {
		t.Errorf("a bad package: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// A flake the sandbox can write is never evaluated on the host: the agent would edit it
// and run code as the operator at the next launch.
func TestNixPackagesNotFromTheWorkdir(t *testing.T) {
	w, _ := nixWorld(t)
	inside := filepath.Join(w.proj, "tools")
	w.write(filepath.Join(inside, "flake.nix"), `{ outputs = { self }: { packages.x86_64-linux.fmt = builtins.readFile "/etc/hostname"; }; }
`)
	w.write(filepath.Join(w.home, ".config/box/profiles/bad.toml"), `packages = ["path:`+inside+`#fmt"]
`)
	os.Symlink(inside, filepath.Join(filepath.Dir(w.home), "via-link"))
	w.write(filepath.Join(w.home, ".config/box/profiles/badlink.toml"), `packages = ["`+filepath.Join(filepath.Dir(w.home), "via-link")+`#fmt"]
`)
	for _, p := range []string{"bad", "badlink"} {
		r := w.run("run", "-y", "--profile", p, "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "which the sandbox can write: its flake would be evaluated on the host") {
			t.Errorf("profile %s: exit %d\nstderr: %s", p, r.code, r.stderr)
		}
	}
}

func TestNixMinimalPath(t *testing.T) {
	w, flake := nixWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/min.toml"), `packages = ["path:`+flake+`#fmt"]
path = "minimal"
tools = ["sh"]
`)
	r := w.run("run", "-y", "--profile", "min", "--", "sh", "-c", `echo "PATH=$PATH"; fmt; command -v ls || echo "no ls"; command -v nix`)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "/usr/bin") || !strings.Contains(r.stdout, "formatted by nix") || !strings.Contains(r.stdout, "no ls") {
		t.Errorf("minimal PATH: %s", r.stdout)
	}
	if !strings.Contains(r.stdout, "/run/box/bin/nix") {
		t.Errorf("the Nix tools are not on a minimal PATH: %s", r.stdout)
	}
}

// The host's nix-daemon builds and fetches on the host's network: its socket is absent
// inside, nothing inside can add to the host's store, unless the operator opts in (and
// is warned).
func TestNixDaemonAbsentUnlessOptedIn(t *testing.T) {
	w, _ := nixWorld(t)
	before := storeListing(t)
	r := w.sh(`ls /nix; test -e /nix/var/nix/daemon-socket/socket && echo SOCKET-PRESENT
echo planted > /tmp/f; nix-store --add /tmp/f 2>&1 && echo ADDED; echo x > /nix/store/planted 2>&1 || echo store-read-only`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "SOCKET-PRESENT") || strings.Contains(r.stdout, "ADDED") || !strings.Contains(r.stdout, "store-read-only") {
		t.Errorf("the host's store was reachable: %s", r.stdout)
	}
	if strings.Fields(r.stdout)[0] != "store" {
		t.Errorf("/nix inside holds more than the store: %s", r.stdout)
	}
	if after := storeListing(t); after != before {
		t.Errorf("the host's store changed")
	}

	w.write(filepath.Join(w.home, ".config/box/profiles/daemon.toml"), `nix = "daemon"
`)
	r = w.run("run", "-y", "--profile", "daemon", "--", "sh", "-c", `echo "remote=$NIX_REMOTE"; echo planted-by-box > /tmp/f; nix-store --add /tmp/f`)
	if r.code != 0 || !strings.Contains(r.stdout, "remote=daemon") || !strings.Contains(r.stdout, "/nix/store/") {
		t.Fatalf("opted in: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, `box: warning: nix = "daemon": the host's nix-daemon is reachable inside`) {
		t.Errorf("no warning: %s", r.stderr)
	}
}

func fileSum(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nix = "store": the agent builds with Nix inside, under the sandbox's own tier (none
// here), into a store of the project's own; the host's store and database are unchanged,
// the host's daemon is out of reach, and what was built is there on the next run.
func TestNixStoreInside(t *testing.T) {
	w, _ := nixWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/selfnix.toml"), `nix = "store"
`)
	w.write(filepath.Join(w.proj, "hello.nix"), `derivation { name = "box-inside-hello"; system = "x86_64-linux"; builder = "/bin/sh";
  args = [ "-c" "/bin/mkdir -p $out/bin; printf '#!/bin/sh\necho built inside\n' > $out/bin/hello; /bin/chmod +x $out/bin/hello" ]; }
`)
	w.write(filepath.Join(w.proj, "fetch.nix"), `import <nix/fetchurl.nix> { url = "http://example.test/tool.tar"; sha256 = "0000000000000000000000000000000000000000000000000000"; }
`)
	store, db := storeListing(t), fileSum(t, "/nix/var/nix/db/db.sqlite")

	r := w.run("run", "-y", "--profile", "selfnix", "--", "sh", "-c", `nix-build hello.nix -o result && ./result/bin/hello
test -e /nix/var/nix/daemon-socket/socket && echo SOCKET-PRESENT
nix-build fetch.nix 2>&1 | tail -3; echo "fetch rc=$?"`)
	if r.code != 0 || !strings.Contains(r.stdout, "built inside") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "SOCKET-PRESENT") {
		t.Errorf("the host's nix-daemon socket is visible inside")
	}
	if !strings.Contains(r.stdout, "unable to download 'http://example.test/tool.tar'") {
		t.Errorf("a fetch from inside tier none did not fail for want of a network:\n%s", r.stdout)
	}
	if storeListing(t) != store {
		t.Errorf("the host's store changed")
	}
	if fileSum(t, "/nix/var/nix/db/db.sqlite") != db {
		t.Errorf("the host's Nix database changed")
	}
	out, err := os.Readlink(filepath.Join(w.proj, "result"))
	if err != nil || !strings.HasPrefix(out, "/nix/store/") {
		t.Fatalf("result link: %q %v", out, err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s, built inside, is in the host's store", out)
	}

	// The next run has it, valid in the project's own store.
	r = w.run("run", "-y", "--profile", "selfnix", "--", "sh", "-c", `./result/bin/hello && nix-store --verify-path "$(readlink result)" && echo valid`)
	if r.code != 0 || !strings.Contains(r.stdout, "built inside") || !strings.Contains(r.stdout, "valid") {
		t.Errorf("the next run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// Tier full starts the helper in the abstract-socket scope's Landlock domain: its
	// mounts (the overlay, /nix) still work there. A run wider than the last starts
	// from a fresh store (trust.go), so it builds again.
	r = w.run("run", "-y", "--profile", "selfnix", "--network", "full", "--", "sh", "-c", `nix-build hello.nix -o result >/dev/null && ./result/bin/hello`)
	if r.code != 0 || !strings.Contains(r.stdout, "built inside") {
		t.Errorf("tier full: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// box --check tries the mechanism for real and says it holds.
	r = w.run("--check")
	if !strings.Contains(r.stdout, `nix = "store" usable`) {
		t.Errorf("box --check:\n%s", r.stdout)
	}

	// Fail closed: a store directory the sandbox could have replaced with a link (it is
	// not: the instance directory's nix/ is outside it, but box checks) stops the launch
	// before anything runs.
	dirs, _ := filepath.Glob(filepath.Join(w.home, ".local/share/box/instances/*/nix/work"))
	if len(dirs) != 1 {
		t.Fatalf("instance store dirs: %v", dirs)
	}
	os.RemoveAll(dirs[0])
	os.Symlink("/tmp", dirs[0])
	r = w.run("run", "-y", "--profile", "selfnix", "--", "sh", "-c", "touch ran-anyway")
	if r.code != 125 || !strings.Contains(r.stderr, "not a directory") {
		t.Errorf("a planted link in the store dir: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "ran-anyway")); err == nil {
		t.Error("the command ran though the store could not be set up")
	}
}
