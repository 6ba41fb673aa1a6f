package bwrap_test

// The project's Nix dev shell, for real: evaluated on the host by a real Nix (Debian's
// nix-bin, a real nix-daemon, a local flake, offline), the sandbox started in it.

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// devShellFlake is a project flake whose default dev shell puts a tool built from a
// local derivation on PATH, sets a variable and has a shellHook that would leave a
// marker at hookMarker (outside the working directory) wherever it ran. Its "tokeny"
// shell exports a token-like variable.
func devShellFlake(hookMarker string) string {
	return `{
  outputs = { self }: let
    tool = derivation {
      name = "box-dev-tool"; system = "x86_64-linux"; builder = "/bin/sh";
      args = [ "-c" "/bin/mkdir -p $out/bin; printf '#!/bin/sh\\necho devtool ran\\n' > $out/bin/devtool; /bin/chmod +x $out/bin/devtool" ];
    };
    shell = extra: derivation ({
      name = "box-dev-shell"; system = "x86_64-linux"; builder = "/bin/bash";
      args = [ "-c" "echo > $out" ]; outputs = [ "out" ];
      PATH = "${tool}/bin";
      DEV_GREETING = "hello from the devshell";
      shellHook = "echo hook-ran sandbox=$BOX_SANDBOX; touch ` + hookMarker + ` 2>/dev/null";
    } // extra);
  in {
    devShells.x86_64-linux.default = shell { };
    devShells.x86_64-linux.tokeny = shell { DEPLOY_TOKEN = "not-a-real-token-but-named-like-one"; };
  };
}
`
}

func TestDevShell(t *testing.T) {
	w, _ := nixWorld(t)
	// Every evaluation goes through this nix, which counts them.
	shim := filepath.Join(filepath.Dir(w.home), "shim")
	count := filepath.Join(shim, "evaluations")
	w.write(filepath.Join(shim, "nix"), "#!/bin/sh\necho x >> "+count+"\nexec /usr/bin/nix \"$@\"\n")
	os.Chmod(filepath.Join(shim, "nix"), 0o755)
	w.write(count, "")
	os.Chmod(count, 0o666)
	for i, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			w.env[i] = "PATH=" + shim + ":" + v
		}
	}
	evaluations := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "x")
	}
	marker := filepath.Join(w.home, "hook-ran-here")
	w.write(filepath.Join(w.proj, "flake.nix"), devShellFlake(marker))
	w.write(filepath.Join(w.home, ".config/box/profiles/dev.toml"), "devshell = true\n")

	script := `devtool; echo "greet=$DEV_GREETING"; echo "path=$PATH"; grep -c "Nix dev shell path:$PWD#devShells" ~/.claude/SANDBOX.md | sed 's/^/sandbox-md /'`
	r := w.run("run", "-y", "--profile", "dev", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"hook-ran sandbox=bwrap", "devtool ran", "sandbox-md 1", "greet=hello from the devshell", "path=/nix/store/"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inside, want %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "DEV_GREETING") || !strings.Contains(r.stderr, "[devshell]") {
		t.Errorf("the audit does not list the dev shell's variable:\n%s", r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the shellHook ran on the host: %s exists", marker)
	}
	if n := evaluations(); n != 1 {
		t.Errorf("first launch: %d evaluations, want 1", n)
	}

	// The second launch takes the cached shell: no evaluation.
	r = w.run("run", "-y", "--profile", "dev", "--", "sh", "-c", script)
	if r.code != 0 || !strings.Contains(r.stdout, "devtool ran") || !strings.Contains(r.stdout, "hook-ran sandbox=bwrap") {
		t.Errorf("second launch: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if n := evaluations(); n != 1 {
		t.Errorf("second launch evaluated again: %d evaluations", n)
	}
	// A changed shell definition evaluates again.
	w.write(filepath.Join(w.proj, "flake.nix"), strings.Replace(devShellFlake(marker), "hello from the devshell", "changed", 1))
	r = w.run("run", "-y", "--profile", "dev", "--", "sh", "-c", `echo "greet=$DEV_GREETING"`)
	if !strings.Contains(r.stdout, "greet=changed") || evaluations() != 2 {
		t.Errorf("changed flake: %d evaluations\nstdout: %s\nstderr: %s", evaluations(), r.stdout, r.stderr)
	}

	// A dev shell exporting a token-like variable is flagged by the audit.
	r = w.run("run", "-y", "--devshell=path:.#tokeny", "--", "true")
	if !strings.Contains(r.stderr, "! DEPLOY_TOKEN") {
		t.Errorf("a token-like dev shell variable was not flagged:\n%s", r.stderr)
	}

	// Failures name the installable and Nix's reason; nothing runs.
	r = w.run("run", "-y", "--devshell=path:.#nosuch", "--", "touch", "ran-anyway")
	if r.code == 0 || !strings.Contains(r.stderr, "path:.#nosuch") || !strings.Contains(r.stderr, "nosuch") || !strings.Contains(r.stderr, "box: hint:") {
		t.Errorf("a missing shell: exit %d\nstderr: %s", r.code, r.stderr)
	}
	os.Remove(filepath.Join(w.proj, "flake.nix"))
	r = w.run("run", "-y", "--devshell", "--", "touch", "ran-anyway")
	if r.code == 0 || !strings.Contains(r.stderr, "no dev shell") {
		t.Errorf("a project without a flake: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "ran-anyway")); err == nil {
		t.Error("the command ran though the dev shell failed")
	}
}

// BenchmarkDevShellLaunch: the launch cost with a dev shell, warm (cached) and cold (the
// cache emptied each time: an evaluation by the host's Nix; the shell's environment is
// already in the store after the first), against box run -y -- true. Each iteration is a
// whole launch (seconds under load): run with -benchtime=5x.
func BenchmarkDevShellLaunch(b *testing.B) {
	testenv.NixDaemon(b)
	w := newWorld(b)
	w.write(filepath.Join(w.proj, "flake.nix"), devShellFlake(filepath.Join(w.home, "hook-ran-here")))
	cache := filepath.Join(w.home, ".cache", "box", "devshell")
	run := func(b *testing.B, args ...string) {
		r := w.run(append([]string{"run", "-y"}, append(args, "--", "true")...)...)
		if r.code != 0 {
			b.Fatalf("exit %d: %s", r.code, r.stderr)
		}
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			run(b)
		}
	})
	run(b, "--devshell") // the shell's environment built, the cache filled
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			run(b, "--devshell")
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			os.RemoveAll(cache)
			b.StartTimer()
			run(b, "--devshell")
		}
	})
}

// A persistent bwrap box made with a profile that names a dev shell starts every
// launch in it.
func TestDevShellBwrapBox(t *testing.T) {
	w, _ := nixWorld(t)
	marker := filepath.Join(w.home, "hook-ran-here")
	w.write(filepath.Join(w.proj, "flake.nix"), devShellFlake(marker))
	w.write(filepath.Join(w.home, ".config/box/profiles/dev.toml"), "devshell = true\n")
	w.must("new", "--backend", "bwrap", "--profile", "dev", "--name", "devbox")
	r := w.in("devbox", `devtool; echo "greet=$DEV_GREETING"`)
	for _, want := range []string{"hook-ran sandbox=bwrap", "devtool ran", "greet=hello from the devshell"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("in the box, want %q: exit %d\nstdout: %s\nstderr: %s", want, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the shellHook ran on the host")
	}
}

// importingFlake is a project flake (protected: flake.nix) whose dev shell lives in
// nix/shell.nix, a file it imports, which no default protected entry names.
const importingFlake = `{
  outputs = { self }: {
    devShells.x86_64-linux.default = import ./nix/shell.nix;
  };
}
`

// benignShell is nix/shell.nix as the project keeps it.
const benignShell = `derivation {
  name = "box-dev-shell"; system = "x86_64-linux"; builder = "/bin/bash";
  args = [ "-c" "echo > $out" ]; outputs = [ "out" ];
  DEV_GREETING = "hello from nix/shell.nix";
}
`

// A narrow run (tier none, no dev shell) rewrites nix/shell.nix, a file the protected
// flake.nix imports, to fetch a secret of the operator's by a file:// URL; the next
// launch with --devshell evaluates the flake on the host, as the operator (hostile
// review, session 11). Nix copies the file into the world-readable store before it
// checks the hash, and the dev shell's own sandbox reads it there. box must refuse to
// evaluate a flake whose .nix files the sandbox can write, before Nix runs; with them
// protected (protect_add), the dev shell works.
func TestDevShellWritableImport(t *testing.T) {
	w, _ := nixWorld(t)
	nonce := make([]byte, 6)
	rand.Read(nonce)
	name := "box-devshell-secret-" + hex.EncodeToString(nonce)
	secret := filepath.Join(w.home, ".ssh", name)
	w.write(secret, "PRIVATE KEY "+name+"\n")
	os.Chmod(secret, 0o600)
	os.Chmod(filepath.Dir(secret), 0o700)
	w.write(filepath.Join(w.proj, "flake.nix"), importingFlake)
	w.write(filepath.Join(w.proj, "nix", "shell.nix"), benignShell)

	hostile := `let k = builtins.fetchurl { url = "file://` + secret + `"; sha256 = "0000000000000000000000000000000000000000000000000000"; }; in
derivation { name = "box-dev-shell"; system = "x86_64-linux"; builder = "/bin/bash"; args = [ "-c" "echo > $out" ]; outputs = [ "out" ]; DEV_GREETING = builtins.seq k "hi"; }
`
	// The narrow run plants it: nix/shell.nix is the sandbox's to write.
	r := w.run("run", "-y", "--", "sh", "-c", `cat > nix/shell.nix`+" <<'EOF'\n"+hostile+"EOF\n")
	if r.code != 0 {
		t.Fatalf("the narrow run: exit %d\nstderr: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "nix", "shell.nix")); string(b) != hostile {
		t.Fatalf("the narrow run did not plant nix/shell.nix: %q", b)
	}
	inStore := func() []string {
		m, _ := filepath.Glob("/nix/store/*-" + name)
		return m
	}
	r = w.run("run", "-y", "--devshell", "--", "sh", "-c", "cat /nix/store/*-"+name)
	if m := inStore(); len(m) != 0 {
		t.Errorf("the host's Nix copied the operator's secret into the world-readable store: %v\nexit %d, stdout: %s\nstderr: %s", m, r.code, r.stdout, r.stderr)
		for _, p := range m {
			exec.Command("nix-store", "--delete", p).Run()
		}
	}
	if r.code == 0 || !strings.Contains(r.stderr, "nix/shell.nix") || !strings.Contains(r.stderr, "box: hint:") {
		t.Errorf("a dev shell whose imported .nix file the sandbox can write: exit %d, want a refusal naming nix/shell.nix\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// Protected by the profile, the (restored) file is the operator's: the shell works.
	w.write(filepath.Join(w.proj, "nix", "shell.nix"), benignShell)
	w.write(filepath.Join(w.home, ".config/box/profiles/nixdev.toml"), "protect_add = [\"nix/shell.nix\"]\n")
	r = w.run("run", "-y", "--profile", "nixdev", "--devshell", "--", "sh", "-c", `echo "greet=$DEV_GREETING"; echo x >> nix/shell.nix`)
	if r.code == 0 || !strings.Contains(r.stdout, "greet=hello from nix/shell.nix") {
		t.Errorf("protected nix/shell.nix: want the shell, and the write refused (exit 1)\nexit %d, stdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "nix", "shell.nix")); string(b) != benignShell {
		t.Errorf("protected nix/shell.nix was changed: %q", b)
	}
}
