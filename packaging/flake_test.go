package packaging

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// root is the repository: the tests run in its packaging directory.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// goTool is the go command that runs these tests (PATH may not have one).
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		testenv.Skip(t, "requires the go command")
	}
	return p
}

// run runs a command in the repository with the go command and a nix that needs no
// build users, and returns its stdout; it fails the test with stderr on an error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = root(t)
	cmd.Env = append(os.Environ(), "GO="+goTool(t), "NIX_CONFIG=build-users-group =")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func requireNix(t *testing.T) {
	t.Helper()
	testenv.RequireTool(t, "nix")
	testenv.RequireTool(t, "nix-instantiate")
}

var vendorHashLine = regexp.MustCompile(`(?m)^\s*vendorHash = "(sha256-[A-Za-z0-9+/=]+)";`)

func flakeVendorHash(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "flake.nix"))
	if err != nil {
		t.Fatal(err)
	}
	m := vendorHashLine.FindAllSubmatch(b, -1)
	if len(m) != 1 {
		t.Fatalf("flake.nix: want one vendorHash line, found %d", len(m))
	}
	return string(m[0][1])
}

// TestCheckFlake is CI's check of the flake: it parses, and its vendorHash is the one
// go mod vendor gives now. When it fails, its output names the right hash and the fix
// (scripts/vendorhash.sh --write).
func TestCheckFlake(t *testing.T) {
	requireNix(t)
	testenv.RequireTool(t, "git")
	run(t, "scripts/check-flake.sh")
}

// TestNARHashAgreesWithNix proves that `nix hash path --type sha256 --sri`, which the
// scripts use, is the NAR hash that a recursive fixed-output derivation is checked
// against: it agrees with narHash, written from the NAR format, on a tree with the
// cases that matter (executable bit, nesting, empty files and directories, symlinks,
// byte-order sorting, lengths on and off the 8-byte padding).
func TestNARHashAgreesWithNix(t *testing.T) {
	requireNix(t)
	dir := filepath.Join(t.TempDir(), "vendor")
	files := map[string]string{
		"modules.txt":           "# example.com/m v1.0.0\n## explicit; go 1.22\nexample.com/m\n",
		"example.com/m/m.go":    "package m\n",
		"example.com/m/LICENSE": "12345678",
		"example.com/m/empty":   "",
		"B/upper-sorts-first":   "x",
		"a.b/dot":               "y",
		"a/z":                   "z",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "example.com/m/run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("m.go", filepath.Join(dir, "example.com/m/link")); err != nil {
		t.Fatal(err)
	}
	want, err := narHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(run(t, "nix", "--extra-experimental-features", "nix-command", "hash", "path", "--type", "sha256", "--sri", dir))
	if got != want {
		t.Fatalf("nix hash path = %s, NAR format gives %s", got, want)
	}
	// The executable bit is part of the hash (go mod vendor copies none, but a hash
	// that ignored it would not be a NAR hash).
	os.Chmod(filepath.Join(dir, "example.com/m/run.sh"), 0o644)
	if h, _ := narHash(dir); h == want {
		t.Fatal("narHash ignores the executable bit")
	}
}

// TestVendorHashIsNAROfGoModVendor checks scripts/vendorhash.sh against its definition,
// done here another way: copy the module (without .git and vendor), run go mod vendor
// in the copy, and take the NAR hash of the vendor directory (narHash, not nix). The
// shared tree is not written to.
func TestVendorHashIsNAROfGoModVendor(t *testing.T) {
	requireNix(t)
	testenv.RequireTool(t, "git")
	got := strings.TrimSpace(run(t, "scripts/vendorhash.sh"))

	src := filepath.Join(t.TempDir(), "src")
	r := root(t)
	err := filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r, p)
		if d.IsDir() && (rel == ".git" || rel == "vendor") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(src, rel), 0o755)
			}
			return nil
		}
		return copyFile(p, filepath.Join(src, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool(t), "mod", "vendor")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GO111MODULE=on")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(src, "vendor", "modules.txt")); err != nil {
		t.Fatalf("go mod vendor wrote no modules.txt: %v", err)
	}
	want, err := narHash(filepath.Join(src, "vendor"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("scripts/vendorhash.sh = %s, NAR hash of go mod vendor = %s", got, want)
	}
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestVendorHashWrite: --write puts the computed hash into a stale flake and changes
// nothing else in it.
func TestVendorHashWrite(t *testing.T) {
	requireNix(t)
	testenv.RequireTool(t, "git")
	orig, err := os.ReadFile(filepath.Join(root(t), "flake.nix"))
	if err != nil {
		t.Fatal(err)
	}
	stale := vendorHashLine.ReplaceAll(orig, []byte(`      vendorHash = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";`))
	f := filepath.Join(t.TempDir(), "flake.nix")
	if err := os.WriteFile(f, stale, 0o644); err != nil {
		t.Fatal(err)
	}
	hash := strings.TrimSpace(run(t, "scripts/vendorhash.sh", "--write", "--flake", f))
	got, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	want := vendorHashLine.ReplaceAll(orig, []byte(`      vendorHash = "`+hash+`";`))
	if !bytes.Equal(got, want) {
		t.Fatalf("--write changed more than the vendorHash line, or not it:\n%s", got)
	}
}

// flakeSummary is what testdata/eval-flake.nix returns.
type flakeSummary struct {
	Inputs    map[string]string              `json:"inputs"`
	Outputs   map[string][]string            `json:"outputs"`
	Packages  map[string]map[string]goModule `json:"packages"`
	Apps      map[string]map[string]app      `json:"apps"`
	DevShells map[string]struct {
		Packages []string `json:"packages"`
	} `json:"devShells"`
	Checks map[string]map[string]goModule `json:"checks"`
}

type goModule struct {
	Pname       string   `json:"pname"`
	Version     string   `json:"version"`
	VendorHash  string   `json:"vendorHash"`
	SubPackages []string `json:"subPackages"`
	Ldflags     []string `json:"ldflags"`
	PostInstall string   `json:"postInstall"`
	NativeBuild []string `json:"nativeBuildInputs"`
	DoCheck     bool     `json:"doCheck"`
	CGOEnabled  int      `json:"CGO_ENABLED"`
	CheckPhase  string   `json:"checkPhase"`
}

type app struct {
	Type    string `json:"type"`
	Program string `json:"program"`
}

// TestFlakeOutputs evaluates the flake's outputs, offline, against a stub nixpkgs
// (testdata/eval-flake.nix) and checks their wiring: both systems; packages default
// and box built from cmd/box with the version stamped, cgo off, completions and man
// pages installed and the runtime tools on box's PATH; apps that run bin/box; a dev
// shell with Go and the runtime tools; checks that build and run the unit tests.
func TestFlakeOutputs(t *testing.T) {
	requireNix(t)
	out := run(t, "nix-instantiate", "--eval", "--strict", "--json",
		"--arg", "flake", "./flake.nix", "packaging/testdata/eval-flake.nix")
	var s flakeSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("eval-flake.nix output: %v\n%s", err, out)
	}
	systems := []string{"aarch64-linux", "x86_64-linux"}
	if s.Inputs["nixpkgs"] == "" {
		t.Errorf("no nixpkgs input: %v", s.Inputs)
	}
	for _, o := range []string{"packages", "apps", "devShells", "checks"} {
		if !slices.Equal(s.Outputs[o], systems) {
			t.Errorf("%s systems = %v, want %v", o, s.Outputs[o], systems)
		}
	}
	vh := flakeVendorHash(t)
	runtimeBins := []string{"/stub/bubblewrap/bin", "/stub/passt/bin", "/stub/slirp4netns/bin", "/stub/incus-client/bin"}
	for _, sys := range systems {
		ps := s.Packages[sys]
		if len(ps) != 2 || ps["default"].Pname == "" {
			t.Fatalf("packages.%s = %v, want default and box", sys, ps)
		}
		for name, p := range ps {
			where := "packages." + sys + "." + name
			if p.Pname != "box" || !slices.Equal(p.SubPackages, []string{"cmd/box"}) || p.CGOEnabled != 0 || p.VendorHash != vh {
				t.Errorf("%s: pname %q subPackages %v CGO_ENABLED %d vendorHash %s", where, p.Pname, p.SubPackages, p.CGOEnabled, p.VendorHash)
			}
			// wrapProgram from makeBinaryWrapper writes a compiled wrapper; makeWrapper's is
			// a bash script every box call would start first.
			if !slices.Contains(p.NativeBuild, "/stub/makeBinaryWrapper") || slices.Contains(p.NativeBuild, "/stub/makeWrapper") {
				t.Errorf("%s: nativeBuildInputs %v: want makeBinaryWrapper, not makeWrapper", where, p.NativeBuild)
			}
			if !slices.Contains(p.Ldflags, "-X main.version="+p.Version) {
				t.Errorf("%s: ldflags %v do not stamp the version %q", where, p.Ldflags, p.Version)
			}
			for _, want := range []string{
				"box completion bash", "box completion zsh", "box completion fish", "installShellCompletion --cmd box",
				"box man ", "installManPage ",
				"wrapProgram $out/bin/box --prefix PATH : " + strings.Join(runtimeBins, ":"),
			} {
				if !strings.Contains(p.PostInstall, want) {
					t.Errorf("%s: postInstall lacks %q:\n%s", where, want, p.PostInstall)
				}
			}
		}
		for _, name := range []string{"default", "box"} {
			a := s.Apps[sys][name]
			if a.Type != "app" || !strings.HasSuffix(a.Program, "-box/bin/box") {
				t.Errorf("apps.%s.%s = %+v, want an app running the box package's bin/box", sys, name, a)
			}
		}
		shell := s.DevShells[sys].Packages
		for _, want := range append([]string{"/stub/go"}, "/stub/bubblewrap", "/stub/passt", "/stub/slirp4netns", "/stub/incus-client", "/stub/nix") {
			if !slices.Contains(shell, want) {
				t.Errorf("devShells.%s.default lacks %s: %v", sys, want, shell)
			}
		}
		unit := s.Checks[sys]["unit"]
		if !unit.DoCheck || !strings.Contains(unit.CheckPhase, "go test") {
			t.Errorf("checks.%s.unit does not run the unit tests: doCheck %v, checkPhase %q", sys, unit.DoCheck, unit.CheckPhase)
		}
		if s.Checks[sys]["package"].Pname != "box" {
			t.Errorf("checks.%s.package is not the box package", sys)
		}
	}
}

// TestMakeInstallUninstall installs into a temporary prefix and uninstalls: the binary
// (stamped), a completion file for each shell where each shell looks, a man page for box
// and each verb; uninstall leaves no file behind.
func TestMakeInstallUninstall(t *testing.T) {
	makeBin := testenv.RequireTool(t, "make")
	tmp := t.TempDir()
	prefix := filepath.Join(tmp, "prefix")
	vars := []string{"PREFIX=" + prefix, "BUILDDIR=" + filepath.Join(tmp, "build"), "GO=" + goTool(t), "VERSION=v9.9.9-test"}
	run(t, makeBin, append([]string{"-s", "install"}, vars...)...)

	want := []string{
		"bin/box",
		"share/bash-completion/completions/box",
		"share/zsh/site-functions/_box",
		"share/fish/vendor_completions.d/box.fish",
	}
	for _, verb := range []string{"", "-run", "-profiles", "-templates", "-completion", "-man"} {
		want = append(want, "share/man/man1/box"+verb+".1")
	}
	for _, f := range want {
		fi, err := os.Stat(filepath.Join(prefix, f))
		if err != nil || fi.Size() == 0 {
			t.Errorf("make install: %s missing or empty (%v)", f, err)
		}
	}
	if v := strings.TrimSpace(run(t, filepath.Join(prefix, "bin/box"), "--version")); v != "box v9.9.9-test" {
		t.Errorf("installed box --version = %q, want the stamped version", v)
	}

	t.Run("bash completes with the installed script", func(t *testing.T) {
		bashCompletion(t, prefix)
	})

	run(t, makeBin, append([]string{"-s", "uninstall"}, vars...)...)
	filepath.WalkDir(prefix, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("make uninstall left %s", p)
		}
		return nil
	})
}

// bashCompletion loads the installed completion file into a real bash (with the
// bash-completion package it relies on) and completes as a user's TAB would: the verbs
// after "box ", the profiles after "box run --profile ".
func bashCompletion(t *testing.T, prefix string) {
	const lib = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(lib); err != nil {
		testenv.Skip(t, "requires the bash-completion package ("+lib+")")
	}
	bash := testenv.RequireTool(t, "bash")
	complete := func(line string) []string {
		t.Helper()
		script := `source "$1"; source "$2"
read -ra COMP_WORDS <<<"$3"; [[ $3 == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE=$3; COMP_POINT=${#3}
__start_box 2>/dev/null; printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "-c", script, "bash", lib, filepath.Join(prefix, "share/bash-completion/completions/box"), line)
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(prefix, "bin")+":/usr/bin:/bin", "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash completing %q: %v", line, err)
		}
		return strings.Fields(string(out))
	}
	got := complete("box ")
	for _, verb := range []string{"completion", "help", "man", "profiles", "run", "templates"} {
		if !slices.Contains(got, verb) {
			t.Errorf("box <TAB>: %v lacks %q", got, verb)
		}
	}
	if got, want := complete("box run --profile "), []string{"claude", "default"}; !slices.Equal(got, want) {
		t.Errorf("box run --profile <TAB>: %v, want %v", got, want)
	}
	if got, want := complete("box pro"), []string{"profiles"}; !slices.Equal(got, want) {
		t.Errorf("box pro<TAB>: %v, want %v", got, want)
	}
}
