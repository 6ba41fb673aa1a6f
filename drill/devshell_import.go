package drill

// The dev shell's import row (hostile review, session 11): a narrow run plants code
// where a wider one has the host evaluate it. The fixture holds a project (a nested
// repository, so its flake.nix is protected) whose flake imports nix/shell.nix, a file
// no protected entry names. Inside, the probe rewrites nix/shell.nix to fetch a secret
// of the operator's (a file in the marker directory, which the sandbox cannot see) by a
// file:// URL: Nix copies it into the world-readable store before it checks the hash.
// Outside, Settle does what the operator's next `box run --devshell` there does
// (bwrap.EvalDevShell, with the protected set of this run): box refuses to hand the
// planted file to Nix (PASS); with that switched off in a test build
// (BOX_UNSAFE_OFF=devshell-writable), Nix evaluates it and the secret lands in
// /nix/store (BREACH).

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend/bwrap"
)

// KindDevShellImport: the planted nix/shell.nix, then the host's dev shell evaluation.
const KindDevShellImport Kind = "host-exec-devshell-import"

// Fixture files of the dev shell project (flake.nix protected, nix/shell.nix not).
const (
	fixtureFlake = "{\n  outputs = { self }: let s = import ./nix/shell.nix; in {\n    devShells.x86_64-linux.default = s;\n    devShells.aarch64-linux.default = s;\n  };\n}\n"
	fixtureShell = "derivation { name = \"box-drill-shell\"; system = \"x86_64-linux\"; builder = \"/bin/bash\"; args = [ \"-c\" \"echo > $out\" ]; }\n"
)

// devShellImportProbe is the row. Targets: nix/shell.nix, the secret, the flake's
// directory, the working directory, then the protected set's read-only paths (the
// guard box's own launch would use).
func devShellImportProbe(in Input) Probe {
	p := Probe{ID: "host-exec:devshell-import", Group: "host-exec", Name: "nix/shell.nix a protected flake.nix imports, host box run --devshell",
		Kind: KindDevShellImport, Want: Blocked, Expected: "the host's Nix evaluates nothing planted"}
	f := in.Fixture
	if f == nil || f.Shell == "" {
		p.Skip = "no fixture"
		return p
	}
	p.Targets = append([]string{filepath.Join(f.Shell, "nix", "shell.nix"), f.Secret, f.Shell, in.Workdir}, in.ReadOnly...)
	return p
}

// devShellImportPlant is what the probe writes: a dev shell that fetches the secret.
func devShellImportPlant(secret string) string {
	return `let k = builtins.fetchurl { url = "file://` + secret + `"; sha256 = "0000000000000000000000000000000000000000000000000000"; }; in
derivation { name = "box-drill-shell"; system = "x86_64-linux"; builder = "/bin/bash"; args = [ "-c" "echo > $out" ]; LEAK = builtins.seq k "x"; }
`
}

// probeDevShellImport (inside) rewrites nix/shell.nix. A write refused is the sandbox
// held there (not seen); any other failure is an error.
func probeDevShellImport(targets []string) (bool, string, error) {
	if len(targets) < 4 {
		return false, "", errors.New("devshell-import probe without its targets")
	}
	err := os.WriteFile(targets[0], []byte(devShellImportPlant(targets[1])), 0o644)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return false, "not planted (" + errName(err) + ")", nil
		}
		return false, "", err
	}
	return true, "planted nix/shell.nix", nil
}

// settleDevShellImport (outside) evaluates the fixture's dev shell as box run
// --devshell would, with a cache of its own; box handing the planted file to Nix is the
// breach, and a store path holding the secret is named. Then it restores the file.
func settleDevShellImport(pr Probe, o Observation) Observation {
	shellNix, secret, dir, wd := pr.Targets[0], pr.Targets[1], pr.Targets[2], pr.Targets[3]
	defer os.WriteFile(shellNix, []byte(fixtureShell), 0o644)
	if !o.Seen || o.Err != "" {
		return o
	}
	cache, err := os.MkdirTemp("", "box-drill-devshell-")
	if err != nil {
		o.Err = err.Error()
		return o
	}
	defer os.RemoveAll(cache)
	env := []string{"XDG_CACHE_HOME=" + cache}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	nix, _ := exec.LookPath("nix")
	guard := bwrap.DevShellGuard{Writable: []string{wd}, ReadOnly: pr.Targets[4:]}
	_, err = bwrap.EvalDevShell(context.Background(), nix, bwrap.DevShellInstallable("true", dir), wd, cache, env, guard)
	var refused *bwrap.DevShellWritableError
	if errors.As(err, &refused) {
		o.Detail += "; box refused to evaluate it on the host"
	} else {
		o.OnHost = true
		o.Detail += "; box handed the planted nix/shell.nix to the host's Nix"
	}
	leaked, _ := filepath.Glob("/nix/store/*-" + filepath.Base(secret))
	for _, p := range leaked {
		o.OnHost = true
		o.Detail += "; the operator's secret is in the world-readable store: " + p
		exec.Command("nix-store", "--delete", p).Run() // as the operator: may be refused
	}
	return o
}
