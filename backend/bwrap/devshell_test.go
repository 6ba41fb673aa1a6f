package bwrap

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heavy-duty/box/envaudit"
	"github.com/heavy-duty/box/internal/errs"
)

func TestParseDevEnv(t *testing.T) {
	d, err := parseDevEnv([]byte(`{"bashFunctions":{},"variables":{
"PATH":{"type":"exported","value":"/nix/store/a-tool/bin:/path-not-set"},
"DEV_GREETING":{"type":"exported","value":"hi"},
"HOME":{"type":"exported","value":"/homeless-shelter"},
"TMPDIR":{"type":"exported","value":"/tmp/nix-build-x"},
"shellHook":{"type":"exported","value":"echo hook"},
"notExported":{"type":"var","value":"x"},
"arr":{"type":"array","value":["a"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Path, []string{"/nix/store/a-tool/bin"}) {
		t.Errorf("path: %v", d.Path)
	}
	if len(d.Vars) != 2 || d.Vars["DEV_GREETING"] != "hi" || d.Vars["shellHook"] != "echo hook" {
		t.Errorf("vars: %v", d.Vars)
	}
}

// The shell's variables enter as "devshell" (audited); box's own win over them.
func TestDevShellMerge(t *testing.T) {
	d := &DevShell{Vars: map[string]string{"DEPLOY_TOKEN": "ghp_0123456789abcdefghij", "HOME": "/x", "LANG": "C"}}
	vars := d.merge([]envaudit.Var{{Name: "HOME", Value: "/h", Origin: "box"}, {Name: "LANG", Value: "C.UTF-8", Origin: "base"}})
	by := map[string]envaudit.Var{}
	for _, v := range vars {
		by[v.Name] = v
	}
	if by["HOME"].Value != "/h" || by["LANG"].Origin != "devshell" || by["DEPLOY_TOKEN"].Origin != "devshell" {
		t.Errorf("merge: %+v", vars)
	}
	if f := envaudit.Audit(vars); len(f) != 1 || f[0].Name != "DEPLOY_TOKEN" {
		t.Errorf("audit: %+v", f)
	}
	if got := d.wrap([]string{"make"}); !slices.Equal(got, []string{"make"}) {
		t.Errorf("no hook, wrapped: %v", got)
	}
	d.Vars["shellHook"] = "echo hi"
	if got := d.wrap([]string{"make", "x"}); !slices.Equal(got, []string{"bash", "-c", devShellHookScript, "box-devshell", "make", "x"}) {
		t.Errorf("wrap: %v", got)
	}
	var nilShell *DevShell
	if nilShell.devShellPATH("/usr/bin") != "/usr/bin" || nilShell.merge(nil) != nil || nilShell.wrap([]string{"sh"})[0] != "sh" {
		t.Error("no dev shell changed something")
	}
}

// A directory without a flake says so, typed; nix is not run.
func TestDevShellNoFlake(t *testing.T) {
	dir := t.TempDir()
	_, err := EvalDevShell(t.Context(), "/nonexistent/nix", DevShellInstallable("true", dir), dir, dir, nil, DevShellGuard{})
	var de *DevShellError
	if !errors.As(err, &de) || !de.NoFlake || !errors.Is(err, ErrDevShell) {
		t.Fatalf("err: %v", err)
	}
	if h := errs.HintOf(err); !strings.Contains(h, "without --devshell") {
		t.Errorf("hint: %q", h)
	}
	// The key follows flake.lock and .nix files.
	os.WriteFile(filepath.Join(dir, "flake.nix"), []byte("{}"), 0o644)
	k1, _ := devShellKey("path:.#default", dir)
	os.WriteFile(filepath.Join(dir, "flake.lock"), []byte("{}"), 0o644)
	k2, _ := devShellKey("path:.#default", dir)
	os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
	k3, _ := devShellKey("path:.#default", dir)
	if k1 == k2 || k2 != k3 {
		t.Errorf("keys: %s %s %s", k1, k2, k3)
	}
}

// The guard lists the flake's .nix files and flake.lock the sandbox can write (whatever
// their type); protected ones and files outside
// what the sandbox writes are not listed. Nix is never run when it lists any.
func TestDevShellGuard(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"flake.nix", "flake.lock", "nix/shell.nix", "nix/README", "vendor/x/default.nix", ".hidden/y.nix"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte("{}"), 0o644)
	}
	os.Symlink("/etc/passwd", filepath.Join(dir, "nix", "link.nix"))
	g := DevShellGuard{Writable: []string{dir}, ReadOnly: []string{filepath.Join(dir, "flake.nix"), filepath.Join(dir, "flake.lock"), filepath.Join(dir, "vendor")}}
	got := g.exposed(dir, dir)
	want := []string{".hidden/y.nix", "nix/link.nix", "nix/shell.nix"}
	if !slices.Equal(got, want) {
		t.Errorf("exposed: %v, want %v", got, want)
	}
	// Nothing writable: nothing listed.
	if got := (DevShellGuard{Writable: []string{filepath.Join(dir, "elsewhere")}}).exposed(dir, dir); len(got) != 0 {
		t.Errorf("outside what the sandbox writes: %v", got)
	}
	// The evaluation is refused, typed, before nix (which does not exist) runs.
	_, err := EvalDevShell(t.Context(), "/nonexistent/nix", "path:.#default", dir, t.TempDir(), nil, g)
	var we *DevShellWritableError
	if !errors.As(err, &we) || !errors.Is(err, ErrDevShell) || !slices.Equal(we.Files, want) {
		t.Fatalf("err: %v", err)
	}
}
