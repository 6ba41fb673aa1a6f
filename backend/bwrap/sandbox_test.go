package bwrap_test

// Real bubblewrap, run as an unprivileged user: the isolation claims of the bwrap
// backend, each proven by a probe inside a real sandbox. The test runs the built box
// binary as the account testenv.User makes, with a planted HOME full of secrets.

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxSecretsInvisible(t *testing.T) {
	w := newWorld(t)
	for rel, content := range secrets {
		p := filepath.Join(w.home, rel)
		r := w.run("run", "-y", "--", "sh", "-c", `cat "$0" 2>&1; echo "rc=$?"`, p)
		if r.code != 0 {
			t.Fatalf("%s: box exit %d: %s", rel, r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "rc=1") || strings.Contains(r.stdout, strings.TrimSpace(strings.SplitN(content, "\n", 2)[0])) {
			t.Errorf("secret %s readable inside: %q", rel, r.stdout)
		}
	}
	// Nothing of the real home is listed: only what box puts there.
	r := w.sh(`cd ~ && find . -mindepth 1 -maxdepth 2 | sort`)
	got := strings.Fields(r.stdout)
	want := []string{"./.claude", "./.claude/CLAUDE.md", "./.claude/SANDBOX.md", "./src", "./src/proj"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("home inside lists %q, want %q", got, want)
	}
	// A search of the whole visible filesystem finds no planted secret.
	r = w.sh(`grep -rIl PLANTED / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr 2>/dev/null; echo done`)
	if strings.TrimSpace(r.stdout) != "done" {
		t.Errorf("planted secrets found inside:\n%s", r.stdout)
	}
}

func TestSandboxEnvAllowlist(t *testing.T) {
	w := newWorld(t)
	r := w.sh(`env`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, leak := range []string{"PLANTED", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "SSH_AUTH_SOCK", "GITHUB_TOKEN", "XDG_RUNTIME_DIR"} {
		if strings.Contains(r.stdout, leak) {
			t.Errorf("%s entered the sandbox:\n%s", leak, r.stdout)
		}
	}
	for _, want := range []string{"HOME=" + w.home, "PATH=/run/box/bin:", "TERM=xterm", "LANG=C.UTF-8"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("env lacks %s:\n%s", want, r.stdout)
		}
	}
	// The audit names what enters, and no value reaches bwrap's argv.
	if !strings.Contains(r.stderr, "TERM") || strings.Contains(r.stderr, "AWS_SECRET") {
		t.Errorf("audit report wrong:\n%s", r.stderr)
	}
}

func TestSandboxAuditFlagsAllowlistedToken(t *testing.T) {
	w := newWorld(t)
	r := w.sh(`printenv GITHUB_TOKEN`, "--env", "GITHUB_TOKEN")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "! GITHUB_TOKEN") || !strings.Contains(r.stderr, "GitHub token") {
		t.Errorf("audit did not flag the allowlisted token:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, plantedToken) {
		t.Errorf("audit printed the whole token:\n%s", r.stderr)
	}
	// -y skips the question, not the allowlist: the named variable entered, as asked.
	if strings.TrimSpace(r.stdout) != plantedToken {
		t.Errorf("allowlisted variable did not enter: %q", r.stdout)
	}
	// Without a terminal and without -y, box refuses and runs nothing.
	r = w.run("run", "--", "touch", "ran")
	if r.code != 125 || !strings.Contains(r.stderr, "-y") {
		t.Errorf("no-tty run without -y: exit %d:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "ran")); err == nil {
		t.Error("the command ran without confirmation")
	}
}

func TestSandboxWrites(t *testing.T) {
	w := newWorld(t)
	r := w.sh(`echo made > new.txt && mkdir -p sub && echo x > sub/f && echo ok`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "ok" {
		t.Fatalf("writing the working directory failed: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"new.txt", "sub/f"} {
		fi, err := os.Stat(filepath.Join(w.proj, f))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != w.uid || int(st.Gid) != w.gid {
			t.Errorf("%s owned by %d:%d, want %d:%d", f, st.Uid, st.Gid, w.uid, w.gid)
		}
	}
	// Outside the working directory and the sandbox's own scratch space (/tmp, /var/tmp,
	// the tmpfs home), every path refuses writes...
	for _, p := range []string{"/etc/box-probe", "/usr/box-probe", "/usr/local/bin/box-probe", "/box-probe", "/var/box-probe", "/run/box-probe", "/run/box/bin/box-probe", "/proc/box-probe", "/dev/box-probe"} {
		r := w.run("run", "-y", "--", "sh", "-c", `echo x > "$0" && echo WROTE`, p)
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("write to %s succeeded", p)
		}
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("write to %s reached the host", p)
		}
	}
	// ...and the home directory is a tmpfs: writes there never reach the real home.
	r = w.sh(`echo evil >> ~/.ssh/authorized_keys; echo evil > ~/.bashrc; echo done`)
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("probe failed: %q %q", r.stdout, r.stderr)
	}
	for _, p := range []string{".ssh/authorized_keys", ".bashrc"} {
		if _, err := os.Stat(filepath.Join(w.home, p)); err == nil {
			t.Errorf("a write to ~/%s reached the real home", p)
		}
	}
}

func TestSandboxNamespaces(t *testing.T) {
	w := newWorld(t)
	// A host process the sandbox must not see.
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := strconv.Itoa(sleeper.Process.Pid)

	r := w.sh(`ls /proc | grep -c '^[0-9]'; test -e /proc/` + pid + ` && echo SEEN; test -e /run/user && echo RUNUSER; cat /proc/net/dev | tail -n +3 | cut -d: -f1; hostname`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Fields(r.stdout)
	if n, _ := strconv.Atoi(lines[0]); n > 4 {
		t.Errorf("%d processes visible inside, want the sandbox's own few", n)
	}
	if strings.Contains(r.stdout, "SEEN") {
		t.Errorf("host pid %s visible inside", pid)
	}
	if strings.Contains(r.stdout, "RUNUSER") {
		t.Error("/run/user exists inside")
	}
	// Tier none: a network namespace with loopback only.
	if ifs := lines[1 : len(lines)-1]; len(ifs) != 1 || strings.TrimSpace(ifs[0]) != "lo" {
		t.Errorf("interfaces inside: %q, want lo only", ifs)
	}
	if lines[len(lines)-1] != "box" {
		t.Errorf("hostname %q, want box", lines[len(lines)-1])
	}
	// No capabilities, and no way to make a user namespace that would give some back.
	r = w.sh(`grep CapEff /proc/self/status; unshare -Ur true 2>/dev/null && echo USERNS`)
	if !strings.Contains(r.stdout, "0000000000000000") || strings.Contains(r.stdout, "USERNS") {
		t.Errorf("capabilities or user namespaces available inside:\n%s", r.stdout)
	}
}

func TestSandboxExitCodeAndSignals(t *testing.T) {
	w := newWorld(t)
	if r := w.sh(`exit 7`); r.code != 7 {
		t.Errorf("exit code %d, want 7 (stderr %q)", r.code, r.stderr)
	}
	c := w.cmd("run", "-y", "--", "sh", "-c", `trap 'echo got-TERM; exit 3' TERM; echo ready; while :; do sleep 0.05; done`)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "ready") {
		t.Fatalf("no ready line: %q", buf[:n])
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, 256)
	m, _ := out.Read(rest)
	err = c.Wait()
	if code := c.ProcessState.ExitCode(); code != 3 || !strings.Contains(string(rest[:m]), "got-TERM") {
		t.Errorf("SIGTERM to box: exit %d (%v), output %q; want the command's trap to run and exit 3", code, err, rest[:m])
	}
}

func TestSandboxTemplateNetworkKeyRefused(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.home, ".config/box/templates/evil/box.env"), "BOX_DESCRIPTION=\"evil\"\nBOX_NETWORK=\"lan\"\n")
	r := w.run("run", "-y", "--template", "evil", "--", "touch", "ran")
	if r.code != 125 || !strings.Contains(r.stderr, "templates cannot choose networking") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.proj, "ran")); err == nil {
		t.Error("the command ran")
	}
}

func TestSandboxInstanceAndSandboxMD(t *testing.T) {
	w := newWorld(t)
	r := w.sh(`cat ~/.claude/CLAUDE.md; cat ~/.claude/SANDBOX.md; echo hist > ~/.claude/history.jsonl`)
	if r.code != 0 || !strings.Contains(r.stdout, "@SANDBOX.md") || !strings.Contains(r.stdout, "none: there is no network") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// ~/.claude inside is the per-project instance directory, not the real ~/.claude.
	matches, _ := filepath.Glob(filepath.Join(w.home, ".local/share/box/instances/proj-*/.claude/history.jsonl"))
	if len(matches) != 1 {
		t.Errorf("history not kept in the per-project instance directory: %v", matches)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".claude/history.jsonl")); err == nil {
		t.Error("history written to the real ~/.claude")
	}
	// Another project gets another instance directory.
	other := filepath.Join(w.home, "src", "other")
	w.write(filepath.Join(other, "x"), "x")
	c := w.cmd("run", "-y", "--", "sh", "-c", "test -e ~/.claude/history.jsonl && echo SHARED; true")
	c.Dir = other
	out, err := c.Output()
	if err != nil || strings.Contains(string(out), "SHARED") {
		t.Errorf("second project sees the first one's history (%v): %q", err, out)
	}
}

// TestSandboxTerminal runs an interactive shell on a real pseudo-terminal: the audit asks
// y/N there, and the shell reads commands and passes its exit code on.
func TestSandboxTerminal(t *testing.T) {
	w := newWorld(t)
	master, slave := openPTY(t)
	defer master.Close()
	c := w.cmd("run", "--", "sh", "-i")
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr.Setsid, c.SysProcAttr.Setctty = true, true
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen bytes.Buffer
	var mu sync.Mutex
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waitFor := func(s string) {
		t.Helper()
		for i := 0; i < 200; i++ {
			mu.Lock()
			ok := strings.Contains(screen.String(), s)
			mu.Unlock()
			if ok {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("terminal never showed %q:\n%s", s, screen.String())
	}
	waitFor("[y/N]")
	master.Write([]byte("y\n"))
	master.Write([]byte("echo hello-$((40+2))\n"))
	waitFor("hello-42")
	master.Write([]byte("exit 4\n"))
	c.Wait()
	if code := c.ProcessState.ExitCode(); code != 4 {
		t.Errorf("exit %d, want 4; screen:\n%s", code, screen.String())
	}
}

// TestSandboxAuthPassthrough: the host login enters read-only only when a profile asks,
// and nothing else of the real ~/.claude comes with it.
func TestSandboxAuthPassthrough(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.home, ".claude/settings.json"), `{"PLANTED-SETTINGS":1}`)
	probe := `cat ~/.claude/.credentials.json 2>/dev/null || echo NOCREDS; echo x >> ~/.claude/.credentials.json 2>/dev/null && echo WRITABLE; cat ~/.claude/settings.json 2>/dev/null; true`
	r := w.sh(probe)
	if !strings.Contains(r.stdout, "NOCREDS") || strings.Contains(r.stdout, "PLANTED") {
		t.Errorf("without auth passthrough: %q", r.stdout)
	}
	w.write(filepath.Join(w.home, ".config/box/profiles/authed.toml"), "auth_passthrough = true\n")
	r = w.sh(probe, "--profile", "authed")
	if r.code != 0 || !strings.Contains(r.stdout, "PLANTED-CLAUDE-CREDS") {
		t.Fatalf("with auth passthrough the login is not there: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "WRITABLE") || strings.Contains(r.stdout, "PLANTED-SETTINGS") {
		t.Errorf("credentials writable or other ~/.claude files visible: %q", r.stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(w.home, ".claude/.credentials.json")); string(b) != secrets[".claude/.credentials.json"] {
		t.Errorf("the real credentials file changed: %q", b)
	}
}

// TestSandboxProfileMount: a socket or directory is present only when a profile mounts
// it, read-only unless it says rw.
func TestSandboxProfileMount(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.home, "data/file"), "DATA\n")
	r := w.sh(`cat ~/data/file 2>/dev/null || echo ABSENT`)
	if !strings.Contains(r.stdout, "ABSENT") {
		t.Errorf("unmounted data visible: %q", r.stdout)
	}
	w.write(filepath.Join(w.home, ".config/box/profiles/data.toml"), "[[mounts]]\npath = \"~/data\"\n")
	r = w.sh(`cat ~/data/file; echo y > ~/data/new 2>/dev/null && echo WROTE; true`, "--profile", "data")
	if !strings.Contains(r.stdout, "DATA") || strings.Contains(r.stdout, "WROTE") {
		t.Errorf("ro mount: %q %q", r.stdout, r.stderr)
	}
	w.write(filepath.Join(w.home, ".config/box/profiles/datarw.toml"), "[[mounts]]\npath = \"~/data\"\nmode = \"rw\"\n")
	r = w.sh(`echo y > ~/data/new && echo WROTE`, "--profile", "datarw")
	if !strings.Contains(r.stdout, "WROTE") {
		t.Errorf("rw mount not writable: %q %q", r.stdout, r.stderr)
	}
	// Mounting a secret path is the profile's choice, said out loud.
	w.write(filepath.Join(w.home, ".config/box/profiles/ssh.toml"), "[[mounts]]\npath = \"~/.ssh\"\n")
	r = w.sh(`true`, "--profile", "ssh")
	if !strings.Contains(r.stderr, "box: warning: profile \"ssh\" mounts") || !strings.Contains(r.stderr, "SSH keys") {
		t.Errorf("no warning for mounting ~/.ssh: %q", r.stderr)
	}
}

// TestSandboxClaudeConfigAtomicWrite: Claude Code replaces its .claude.json by writing a
// temporary file and renaming it; that must work inside and persist per project.
func TestSandboxClaudeConfigAtomicWrite(t *testing.T) {
	w := newWorld(t)
	r := w.sh(`f="$CLAUDE_CONFIG_DIR/.claude.json"; echo '{"n":1}' > "$f.tmp" && mv "$f.tmp" "$f" && echo '{"n":2}' > "$f.tmp" && mv "$f.tmp" "$f" && echo RENAMED`)
	if !strings.Contains(r.stdout, "RENAMED") {
		t.Fatalf("write-and-rename of .claude.json failed: %q %q", r.stdout, r.stderr)
	}
	matches, _ := filepath.Glob(filepath.Join(w.home, ".local/share/box/instances/proj-*/.claude/.claude.json"))
	if len(matches) != 1 {
		t.Fatalf("no .claude.json in the instance directory: %v", matches)
	}
	if b, _ := os.ReadFile(matches[0]); strings.TrimSpace(string(b)) != `{"n":2}` {
		t.Errorf("instance .claude.json = %q", b)
	}
	if r := w.sh(`cat "$CLAUDE_CONFIG_DIR/.claude.json"`); strings.TrimSpace(r.stdout) != `{"n":2}` {
		t.Errorf("the next session does not see it: %q", r.stdout)
	}
}

// TestSandboxAsRoot: box refuses to sandbox as root unless told, and even then the
// sandbox cannot write sysctls (a sysctl file's owner may write it without any
// capability; core_pattern would run a program of the sandbox's choosing as host root).
func TestSandboxAsRoot(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "bwrap")
	box := boxBinary(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "home", "proj"), 0o755)
	run := func(args ...string) (string, int) {
		c := exec.Command(box, args...)
		c.Dir = filepath.Join(dir, "home", "proj")
		c.Env = []string{"HOME=" + filepath.Join(dir, "home"), "PATH=/usr/bin:/bin"}
		out, _ := c.CombinedOutput()
		return string(out), c.ProcessState.ExitCode()
	}
	if out, code := run("run", "-y", "--", "touch", "ran"); code != 125 || !strings.Contains(out, "refusing to sandbox as root") {
		t.Errorf("root without --allow-root: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "home", "proj", "ran")); err == nil {
		t.Error("the command ran as root without --allow-root")
	}
	// The value written back is the current one: harmless even if the write went through.
	out, code := run("run", "--allow-root", "-y", "--", "sh", "-c",
		`v=$(cat /proc/sys/vm/max_map_count); echo "$v" > /proc/sys/vm/max_map_count 2>/dev/null && echo SYSCTL-WRITTEN; test -w /proc/sys/kernel/core_pattern && echo CORE-PATTERN-WRITABLE; true`)
	if code != 0 || strings.Contains(out, "SYSCTL-WRITTEN") || strings.Contains(out, "CORE-PATTERN-WRITABLE") {
		t.Errorf("sysctls writable from a root sandbox (exit %d):\n%s", code, out)
	}
	if !strings.Contains(out, "running as root (--allow-root)") {
		t.Errorf("no warning for --allow-root:\n%s", out)
	}
}

// TestSandboxPlantedLinks: what the sandbox can write must not steer the next launch: a
// mount source inside the working directory swapped for a link to ~/.ssh, a tool on PATH
// that resolves into the working directory, and a home check fooled by a changed $HOME.
func TestSandboxPlantedLinks(t *testing.T) {
	w := newWorld(t)
	// A profile mounts ./data; a previous session replaced it with a link to ~/.ssh.
	if err := os.Symlink(filepath.Join(w.home, ".ssh"), filepath.Join(w.proj, "data")); err != nil {
		t.Fatal(err)
	}
	os.Lchown(filepath.Join(w.proj, "data"), w.uid, w.gid)
	w.write(filepath.Join(w.home, ".config/box/profiles/data.toml"), "[[mounts]]\npath = \""+filepath.Join(w.proj, "data")+"\"\ntarget = \"/data\"\n")
	r := w.sh(`cat /data/id_ed25519; echo RAN`, "--profile", "data")
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "a symlink (to "+filepath.Join(w.home, ".ssh")) {
		t.Errorf("planted mount link: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	// A tool found through a PATH entry inside the project is not bound.
	w.write(filepath.Join(w.proj, "bin/mytool"), "#!/bin/sh\necho planted\n")
	os.Chmod(filepath.Join(w.proj, "bin/mytool"), 0o755)
	w.env = append(envWithout(w.env, "PATH"), "PATH="+filepath.Join(w.proj, "bin")+":/usr/bin:/bin")
	w.write(filepath.Join(w.home, ".config/box/profiles/tool.toml"), "tools = [\"mytool\"]\n")
	r = w.sh(`ls /run/box/bin`, "--profile", "tool")
	if r.code != 0 || strings.Contains(r.stdout, "mytool") || !strings.Contains(r.stderr, "inside a directory the sandbox can write") {
		t.Errorf("tool inside the workdir: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	// $HOME pointing elsewhere does not make the real home (from the password database)
	// an acceptable working directory.
	u, err := user.LookupId(strconv.Itoa(w.uid))
	if err != nil {
		t.Fatal(err)
	}
	c := w.cmd("run", "-y", "--", "touch", "ran")
	c.Dir = u.HomeDir
	out, _ := c.CombinedOutput()
	if c.ProcessState.ExitCode() != 125 || !strings.Contains(string(out), "holds your home directory") {
		t.Errorf("real home as working directory with HOME elsewhere: exit %d\n%s", c.ProcessState.ExitCode(), out)
	}
	if _, err := os.Stat(filepath.Join(u.HomeDir, "ran")); err == nil {
		os.Remove(filepath.Join(u.HomeDir, "ran"))
		t.Error("the command ran in the real home")
	}
}
