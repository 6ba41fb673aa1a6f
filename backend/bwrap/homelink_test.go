package bwrap_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A dotfiles repository as the working directory, as the unprivileged user: ~/.bashrc
// links to shell/bashrc in it. The sandbox's write to bashrc, and its swap of shell/ for a
// look-alike, are refused, and the host's next shell runs nothing it planted. With
// home:link dropped by a user profile, the same run plants and the host runs it: the
// check can fail.
func TestSandboxHomeLinkReadOnly(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.proj, "shell", "bashrc"), "alias ll='ls -l'\n")
	bashrc := filepath.Join(w.home, ".bashrc")
	if err := os.Symlink("src/proj/shell/bashrc", bashrc); err != nil {
		t.Fatal(err)
	}
	os.Lchown(bashrc, w.uid, w.gid)
	// Dangling: ~/.bashrc sources it only if it exists.
	local := filepath.Join(w.home, ".bashrc.local")
	os.Symlink("src/proj/shell/bashrc.local", local)
	os.Lchown(local, w.uid, w.gid)
	marks := w.markerDir()
	plant := `echo 'id >` + marks + `/local' > shell/bashrc.local
echo 'id >` + marks + `/bashrc' >> shell/bashrc 2>/dev/null && echo wrote
mv shell shell.old 2>/dev/null && mkdir shell && echo 'id >` + marks + `/swap' > shell/bashrc && echo swapped
true`
	hostShell := func() {
		t.Helper()
		c := exec.Command("sh", "-c", ". "+bashrc)
		c.Env = w.env
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.gid)}}
		c.Run()
	}

	r := w.sh(plant)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "wrote") || strings.Contains(r.stdout, "swapped") {
		t.Errorf("the sandbox changed what ~/.bashrc names: %q", r.stdout)
	}
	hostShell()
	if m := w.marks(marks); len(m) != 0 {
		t.Fatalf("the host's shell ran what the sandbox planted: %v", m)
	}
	if !strings.Contains(r.stderr, "box: audit: shell/bashrc.local: protected file added") {
		t.Errorf("the audit does not report the dangling link's new target:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "shell", "bashrc.local")); err == nil {
		t.Error("shell/bashrc.local is still in place")
	}
	dry := w.run("run", "-y", "--dry-run", "--", "true")
	if !strings.Contains(dry.stdout+dry.stderr, "home:link") {
		t.Errorf("--dry-run does not show the home link:\n%s%s", dry.stdout, dry.stderr)
	}

	w.write(filepath.Join(w.home, ".config/box/profiles/dotfiles.toml"), "protect_drop = [\"home:link\"]\n")
	r = w.sh(plant, "--profile", "dotfiles")
	if !strings.Contains(r.stdout, "wrote") {
		t.Fatalf("with home:link dropped the plant did not land: %q\n%s", r.stdout, r.stderr)
	}
	hostShell()
	if m := w.marks(marks); len(m) == 0 {
		t.Error("with home:link dropped the host's shell ran nothing: the check above proves nothing")
	}
}

// What else a dotfiles repository holds that the host runs (hostile review, session 18),
// as the unprivileged user: a file ~/.ssh/config links to (stow links a file at a time
// where ~/.ssh exists; ssh runs its Match exec lines) is read-only inside, and the
// template directory the global git config names, not made yet (git clone copies its
// hooks into every new repository), is moved aside after the run. A directory of the
// operator's PATH in the tree (the shell runs bin/git by name) stays writable, since
// builds and installs write there (direnv's PATH_add bin), and the launch says so. With
// home:link dropped by a user profile the first two land: the check can fail.
func TestSandboxHomeLinkDotDirPathTemplate(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.proj, "ssh", "config"), "Host *\n")
	w.write(filepath.Join(w.proj, "bin", "README"), "tools\n")
	os.MkdirAll(filepath.Join(w.home, ".ssh"), 0o700)
	os.Chown(filepath.Join(w.home, ".ssh"), w.uid, w.gid)
	cfg := filepath.Join(w.home, ".ssh", "config")
	os.Remove(cfg) // the world's own: stow's link in its place
	if err := os.Symlink("../src/proj/ssh/config", cfg); err != nil {
		t.Fatal(err)
	}
	os.Lchown(cfg, w.uid, w.gid)
	w.write(filepath.Join(w.home, ".gitconfig"), "[init]\n\ttemplateDir = ~/src/proj/git_template\n")
	bin := filepath.Join(w.proj, "bin")
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "PATH=") {
			w.env[i] = "PATH=" + bin + ":" + kv[len("PATH="):]
		}
	}
	plant := `printf 'Match exec "id"\n' >> ssh/config 2>/dev/null && echo wrote-ssh
mkdir -p git_template/hooks && printf '#!/bin/sh\nid\n' > git_template/hooks/post-checkout && echo wrote-template
printf '#!/bin/sh\necho built\n' > bin/tool && echo wrote-bin
true`
	r := w.sh(plant)
	if r.code != 0 || strings.Contains(r.stdout, "wrote-ssh") || !strings.Contains(r.stdout, "wrote-bin") {
		t.Errorf("exit %d; want ssh/config refused and bin/ writable: %q\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: warning: your PATH holds "+bin+", in the working directory") {
		t.Errorf("the launch does not say the PATH's directory in the tree:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: git_template/hooks/post-checkout: protected file added") {
		t.Errorf("the audit does not report the template's new hook:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "git_template/hooks/post-checkout")); err == nil {
		t.Error("git_template/hooks/post-checkout is in place after the run")
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "ssh", "config")); string(b) != "Host *\n" {
		t.Errorf("ssh/config changed: %q", b)
	}

	w.write(filepath.Join(w.home, ".config/box/profiles/dotfiles.toml"), "protect_drop = [\"home:link\"]\n")
	r = w.sh(plant, "--profile", "dotfiles")
	for _, want := range []string{"wrote-ssh", "wrote-template"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("with home:link dropped the plant did not land (%s): %q\n%s", want, r.stdout, r.stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "git_template/hooks/post-checkout")); err != nil {
		t.Error("with home:link dropped the template's hook was moved aside: the check above proves nothing")
	}
}

// rustup's toolchain files, as the unprivileged user: an existing rust-toolchain.toml is
// read-only inside (a path = "..." there would run the sandbox's own rustc on the host's
// next cargo or prompt), and a rust-toolchain the run creates is moved aside after it.
func TestSandboxRustToolchainProtected(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.proj, "rust-toolchain.toml"), "[toolchain]\nchannel = \"stable\"\n")
	r := w.sh(`printf '[toolchain]\npath = "%s/.evil"\n' "$PWD" > rust-toolchain.toml 2>/dev/null && echo wrote
printf '[toolchain]\npath = "%s/.evil"\n' "$PWD" > rust-toolchain && echo created`)
	if strings.Contains(r.stdout, "wrote") || !strings.Contains(r.stdout, "created") {
		t.Errorf("inside: %q\n%s", r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "rust-toolchain.toml")); string(b) != "[toolchain]\nchannel = \"stable\"\n" {
		t.Errorf("rust-toolchain.toml changed: %q", b)
	}
	if !strings.Contains(r.stderr, "box: audit: rust-toolchain: protected file added") {
		t.Errorf("the audit does not report rust-toolchain:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "rust-toolchain")); err == nil {
		t.Error("rust-toolchain is still in place")
	}
}

// Agent and dev-container files outside .claude, as the unprivileged user: an existing
// .opencode/plugin and opencode.json stay read-only inside, and a .devcontainer.json,
// .aider.conf.yml or .kiro hook the run creates is moved aside after it.
func TestSandboxAgentFilesProtected(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.proj, "opencode.json"), "{}\n")
	w.write(filepath.Join(w.proj, ".opencode", "plugin", "ok.js"), "export const Ok = async () => ({})\n")
	r := w.sh(`echo '{"mcp":{"x":{"type":"local","command":["sh","-c","id"]}}}' > opencode.json 2>/dev/null && echo wrote-opencode
echo 'export const X = async ({ $ }) => { await $` + "`id`" + `; return {} }' > .opencode/plugin/x.js 2>/dev/null && echo wrote-plugin
echo '{"initializeCommand":"id"}' > .devcontainer.json
echo 'lint-cmd: id' > .aider.conf.yml
mkdir -p .kiro/hooks && echo '{"then":{"type":"runCommand","command":"id"}}' > .kiro/hooks/x.kiro.hook
echo done`)
	if !strings.Contains(r.stdout, "done") || strings.Contains(r.stdout, "wrote-") {
		t.Errorf("inside: %q\n%s", r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.proj, "opencode.json")); string(b) != "{}\n" {
		t.Errorf("opencode.json changed: %q", b)
	}
	for _, f := range []string{".devcontainer.json", ".aider.conf.yml", ".kiro/hooks/x.kiro.hook"} {
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("%s is still in place", f)
		}
	}
}
