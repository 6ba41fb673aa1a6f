package drill

// The protect group: nothing the sandbox writes runs outside it. Before launch, the
// drill makes a fixture inside the working directory (a repository with a nested one, a
// linked worktree, .envrc, a VS Code task file and Claude Code settings: what a real
// project has), so box's scan finds it and protects it exactly as it protects the
// operator's own. Inside, each probe plants what a hostile agent would (a hook,
// core.fsmonitor, core.hooksPath, a nested repository's config, a rewritten worktree
// pointer, .envrc, a folderOpen task, a SessionStart hook) in place and by rename. After
// the run, Settle does on the host what the host's tools would do (git commit, git
// status in each repository, direnv's eval of .envrc, VS Code's folderOpen tasks, Claude
// Code's SessionStart hooks) and checks for the planted command's marker, in a host
// directory the sandbox cannot see. Settle runs a planted file only when it is exactly
// the drill's own plant; anything else there is a BREACH reported without running it.

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/heavy-duty/box/policy"
)

// KindPlant: write Plant's files (the first is the protected target) in place, else by
// rename; seen = the target took the plant. KindLoosened: a row reporting a protected
// entry the profile dropped (always seen).
const (
	KindPlant    Kind = "plant"
	KindLoosened Kind = "loosened"
)

// PlantFile is one file (or directory) a plant probe writes inside.
type PlantFile struct {
	Path    string `json:"path"`
	Content string `json:"content,omitempty"`
	Mode    uint32 `json:"mode,omitempty"`
	Dir     bool   `json:"dir,omitempty"`
	Link    string `json:"link,omitempty"`   // made a symbolic link to Link (not for the first file)
	Remove  bool   `json:"remove,omitempty"` // removed, whole (not for the first file)
}

// Host actions Settle performs outside, as the host's tools would.
const (
	HostGitCommit   = "git commit"                // hooks run
	HostGitStatus   = "git status"                // core.fsmonitor runs
	HostDirenv      = "direnv (eval .envrc)"      // an allowed .envrc runs
	HostVSCodeOpen  = "VS Code folder open"       // tasks with runOn folderOpen run
	HostClaudeStart = "Claude Code session start" // SessionStart hooks run
	HostGitRebase   = "git rebase --continue"     // the todo list's exec lines run
	HostShellRc     = "shell (. ~/LINK)"          // a dotfile the home links to runs
	// The configured hooks of git 2.54 and later (hook.NAME.command on the events
	// hook.NAME.event names), run by git commit. The drill reads them with the host's
	// git config and runs the pre-commit ones as such a git would: the host's git may be
	// older and run none, and the operator's next git may be newer.
	HostGitConfigHook = "git commit (configured hooks, git 2.54+; gc.recentObjectsHook, git 2.42+)"
)

// Fixture is the drill's own little project inside the working directory: Repo and Hp
// are repositories whose .git is a file naming a git directory elsewhere in the fixture
// (as a submodule's does), so box protects them part by part (hooks, config...);
// Nested is a plain clone inside Repo (its .git read-only whole); Wt a linked worktree
// of Repo.
type Fixture struct {
	Dir     string // the fixture's root, removed by Remove
	Repo    string // a repository (its top)
	RepoGit string // its git directory
	Nested  string // a repository nested in Repo
	Hp      string // another one, for core.hooksPath (Repo's config takes fsmonitor)
	HpGit   string
	Wt      string // a linked worktree of Repo, inside it
	// Unscanned is a repository in node_modules, where the protected set's scan does
	// not go: nothing of it is read-only, and only the post-run audit watches it. Its
	// config names a relative hooks directory (husky's layout): UnscannedConfig.
	Unscanned string
	// Degit is another repository in node_modules, whose .git the sandbox removes before
	// it writes the work tree's .envrc.
	Degit   string
	Markers string // a host directory the sandbox cannot see
	// Commit is the one commit of Repo's main branch (a rebase needs one).
	Commit string
	// Dotfile is a file of the fixture that HomeLink, a link in the operator's home (made
	// by LinkHome), names, as a dotfiles repository's files are named.
	Dotfile, HomeLink string
	// DotdirFile is a file of the fixture that DotdirLink, a link in a dot-directory the
	// drill makes in the home (~/.box-drill-fixture-NONCE.d/rc), names: stow links a
	// file at a time where the directory exists (~/.ssh/config).
	DotdirFile, DotdirLink string
	// MissingFile is the path a dangling link in the home, MissingLink, names in a
	// directory of the fixture not made yet (~/.bashrc.local naming private/bashrc.local).
	MissingFile, MissingLink string
	// HookScript is a script in Repo that Repo's post-commit hook links to (a project
	// keeping its hooks in the tree; not pre-commit, which the hook row plants).
	HookScript string
	// HpHooks is the directory Hp's core.hooksPath names, HpInclude the file its config
	// includes.
	HpHooks, HpInclude string
	// Shell is a project (a nested repository) whose protected flake.nix imports
	// nix/shell.nix; Secret a file of the operator's, in Markers (devshell_import.go).
	Shell, Secret string
	// GitCred is the marker of the credentials in Hp's config (gitcreds.go; "" none);
	// GitCredRefused: box refused to launch with them (the Landlock mode), so the drill
	// took them out.
	GitCred        string
	GitCredRefused bool
	// Orig is each protected file's content as the fixture made it.
	Orig map[string]string
}

const fixtureConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"

// MakeFixture creates the fixture under workdir (named by nonce) and the marker
// directory under the host's temporary directory. It runs no tool.
func MakeFixture(workdir, nonce string) (*Fixture, error) {
	f := &Fixture{Dir: filepath.Join(workdir, ".box-drill-fixture-"+nonce), Orig: map[string]string{}}
	f.Repo = filepath.Join(f.Dir, "repo")
	f.RepoGit = filepath.Join(f.Dir, "gitdirs", "repo")
	f.Nested = filepath.Join(f.Repo, "nested")
	f.Hp = filepath.Join(f.Repo, "hp")
	f.HpGit = filepath.Join(f.Dir, "gitdirs", "hp")
	f.Wt = filepath.Join(f.Repo, "wt")
	f.Shell = filepath.Join(f.Dir, "devshell")
	f.Unscanned = filepath.Join(f.Dir, "node_modules", "dep")
	f.Degit = filepath.Join(f.Dir, "node_modules", "dep2")
	m, err := os.MkdirTemp("", "box-drill-markers-")
	if err != nil {
		return nil, err
	}
	f.Markers = m
	f.Secret = filepath.Join(m, "box-drill-secret-"+nonce)
	if err := os.WriteFile(f.Secret, []byte("box drill secret "+nonce+"\n"), 0o600); err != nil {
		os.RemoveAll(m)
		return nil, err
	}
	if err := os.MkdirAll(f.Dir, 0o755); err == nil {
		err = f.writeOwner()
	}
	wtGit := filepath.Join(f.RepoGit, "worktrees", "wt")
	files := map[string]string{
		filepath.Join(f.Repo, ".envrc"): "export BOX_DRILL=1\nsource_env_if_exists .envrc.local\n",
		// In a plain subdirectory, so the top's .yarnrc.yml entry keeps its own probe.
		filepath.Join(f.Repo, "web", ".yarnrc.yml"):       "yarnPath: .yarn/releases/box-drill-yarn.cjs\n",
		filepath.Join(f.Repo, "web", "mise.toml"):         "[env]\n_.source = \"box-drill-env.sh\"\n",
		filepath.Join(f.Repo, ".vscode", "tasks.json"):    `{"version":"2.0.0","tasks":[]}` + "\n",
		filepath.Join(f.Repo, ".claude", "settings.json"): `{"permissions":{"allow":[]}}` + "\n",
		filepath.Join(f.Repo, ".git"):                     "gitdir: " + f.RepoGit + "\n",
		filepath.Join(f.Hp, ".git"):                       "gitdir: " + f.HpGit + "\n",
		filepath.Join(f.Wt, ".git"):                       "gitdir: " + wtGit + "\n",
		filepath.Join(wtGit, "HEAD"):                      "ref: refs/heads/wt\n",
		filepath.Join(wtGit, "commondir"):                 "../..\n",
		filepath.Join(wtGit, "gitdir"):                    filepath.Join(f.Wt, ".git") + "\n",
		filepath.Join(f.Shell, "flake.nix"):               fixtureFlake,
		filepath.Join(f.Shell, "nix", "shell.nix"):        fixtureShell,
	}
	var dirs []string
	for _, g := range []string{f.RepoGit, f.HpGit, filepath.Join(f.Nested, ".git"), filepath.Join(f.Shell, ".git"), filepath.Join(f.Unscanned, ".git"), filepath.Join(f.Degit, ".git")} {
		files[filepath.Join(g, "HEAD")] = "ref: refs/heads/main\n"
		files[filepath.Join(g, "config")] = fixtureConfig
		dirs = append(dirs, filepath.Join(g, "hooks"), filepath.Join(g, "objects"), filepath.Join(g, "refs", "heads"))
	}
	// Repo's config enables extensions.worktreeConfig, so git reads a config.worktree
	// there and box protects it (a placeholder where it is absent).
	files[filepath.Join(f.RepoGit, "config")] = strings.Replace(fixtureConfig, "repositoryformatversion = 0", "repositoryformatversion = 1", 1) + "[extensions]\n\tworktreeConfig = true\n"
	// Hp's config names a hooks directory and includes a file in the tree, so the
	// protected set's hookspath and include scopes have an instance to probe.
	f.HpHooks, f.HpInclude = filepath.Join(f.Hp, ".githooks"), filepath.Join(f.Hp, ".box-include")
	files[filepath.Join(f.HpGit, "config")] = fixtureConfig + "\thooksPath = " + f.HpHooks + "\n[include]\n\tpath = " + f.HpInclude + "\n"
	files[f.HpInclude] = "[user]\n\tname = box drill\n"
	files[f.UnscannedConfig()] = fixtureConfig + "\thooksPath = .githooks\n"
	f.Orig[f.UnscannedConfig()] = files[f.UnscannedConfig()]
	f.Orig[f.HpConfig()] = files[f.HpConfig()]
	f.plantGitCred(nonce) // gitcreds.go
	files[f.HpConfig()] = f.Orig[f.HpConfig()]
	dirs = append(dirs, f.HpHooks)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Remove()
			return nil, err
		}
	}
	// One commit on Repo's main branch, by hand (the drill runs no tool here): its tree
	// is the empty tree, which git knows without an object.
	commit := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor box drill <drill@box.invalid> 0 +0000\ncommitter box drill <drill@box.invalid> 0 +0000\n\nbox drill\n"
	obj := fmt.Sprintf("commit %d\x00%s", len(commit), commit)
	sum := sha1.Sum([]byte(obj))
	f.Commit = hex.EncodeToString(sum[:])
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte(obj))
	zw.Close()
	files[filepath.Join(f.RepoGit, "objects", f.Commit[:2], f.Commit[2:])] = z.String()
	files[filepath.Join(f.RepoGit, "refs", "heads", "main")] = f.Commit + "\n"
	f.HookScript = filepath.Join(f.Repo, "scripts", "post-commit")
	files[f.HookScript] = "#!/bin/sh\nexit 0\n"
	for p, c := range files {
		mode := os.FileMode(0o644)
		if p == f.HookScript {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte(c), mode)
		}
		if err != nil {
			f.Remove()
			return nil, err
		}
		f.Orig[p] = c
	}
	if err := os.Symlink(f.HookScript, filepath.Join(f.RepoGit, "hooks", "post-commit")); err != nil {
		f.Remove()
		return nil, err
	}
	return f, nil
}

// LinkHome makes the fixture's dotfile and links home/.box-drill-fixture-NONCE-rc to it
// (removed by Remove), before the scan, so box protects it as it protects a dotfiles
// repository's files.
func (f *Fixture) LinkHome(home string) error {
	dot := filepath.Join(f.Dir, "dotfiles", "rc")
	if err := os.MkdirAll(filepath.Dir(dot), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dot, []byte("export BOX_DRILL=1\n"), 0o644); err != nil {
		return err
	}
	link := filepath.Join(home, filepath.Base(f.Dir)+"-rc")
	if err := os.Symlink(dot, link); err != nil {
		return err
	}
	f.Dotfile, f.HomeLink = dot, link
	f.Orig[dot] = "export BOX_DRILL=1\n"
	// A link a level down in a dot-directory of the home, and a dangling one.
	dotdir, dotdirFile := filepath.Join(home, filepath.Base(f.Dir)+".d"), filepath.Join(f.Dir, "dotfiles", "dotdir-rc")
	if err := os.WriteFile(dotdirFile, []byte("export BOX_DRILL=1\n"), 0o644); err != nil {
		return err
	}
	if err := os.Mkdir(dotdir, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(dotdirFile, filepath.Join(dotdir, "rc")); err != nil {
		os.Remove(dotdir)
		return err
	}
	f.DotdirFile, f.DotdirLink = dotdirFile, filepath.Join(dotdir, "rc")
	f.Orig[dotdirFile] = "export BOX_DRILL=1\n"
	missing, missingLink := filepath.Join(f.Dir, "dotfiles", "missing", "rc"), filepath.Join(home, filepath.Base(f.Dir)+"-rc-missing")
	if err := os.Symlink(missing, missingLink); err != nil {
		return err
	}
	f.MissingFile, f.MissingLink = missing, missingLink
	return nil
}

// removeHomeLinks removes the links LinkHome made in home for the fixture dir (and the
// dot-directory holding one), each only while it is the drill's own: a link into dir.
func removeHomeLinks(home, dir string) {
	base := filepath.Base(dir)
	for _, l := range []string{base + "-rc", base + "-rc-missing", filepath.Join(base+".d", "rc")} {
		l = filepath.Join(home, l)
		if t, err := os.Readlink(l); err == nil && strings.HasPrefix(t, dir+"/") {
			os.Remove(l)
		}
	}
	os.Remove(filepath.Join(home, base+".d")) // only when empty
}

// UnscannedConfig is the config of the repository in node_modules.
func (f *Fixture) UnscannedConfig() string { return filepath.Join(f.Unscanned, ".git", "config") }

// Remove deletes the fixture and the markers.
func (f *Fixture) Remove() {
	if f.HomeLink != "" {
		removeHomeLinks(filepath.Dir(f.HomeLink), f.Dir) // only the drill's own links
	}
	os.RemoveAll(f.Dir)
	os.RemoveAll(f.Markers)
}

// protectProbes are the protect group's rows.
func protectProbes(in Input) []Probe {
	f := in.Fixture
	var out []Probe
	for _, d := range in.Dropped {
		out = append(out, Probe{ID: "protect:drop:" + d, Group: "protect", Name: "protected entry " + d, Kind: KindLoosened,
			Want: Allowed, Expected: "dropped (protect_drop)"})
	}
	classes := []struct{ id, name string }{
		{"hook", "git hook (.git/hooks)"}, {"fsmonitor", "git core.fsmonitor"}, {"hookspath", "git core.hooksPath"},
		{"nested-config", "nested repository's config"}, {"worktree-pointer", "worktree .git pointer"},
		{"envrc", ".envrc (direnv)"}, {"vscode-task", ".vscode folderOpen task"}, {"agent-settings", "agent settings hooks"},
		{"rebase-exec", "rebase todo exec line"}, {"home-link", "dotfile the home links to"},
		{"hook-link", "script a git hook links to"}, {"link-out", "a protected path through a link to the agent's state"},
		{"unscanned-envrc", ".envrc of a repository the scan does not reach (node_modules)"},
		{"worktree-hooks", "core.worktree moving a relative core.hooksPath"},
		{"config-hook", "git 2.54 configured hook (hook.NAME.command)"},
		{"degit-envrc", ".envrc of a repository whose .git the run removed"},
		{"home-dotdir-link", "dotfile a link in a dot-directory of the home names"},
		{"home-missing-link", "dotfile a dangling home link names, in a directory not made yet"},
		{"subdir-agent-settings", "agent settings hooks in a plain subdirectory"},
	}
	if f == nil {
		for _, c := range classes {
			out = append(out, Probe{ID: "protect:" + c.id, Group: "protect", Name: c.name, Kind: KindPlant, Want: Blocked,
				Expected: "not run by the host", Skip: "no fixture"})
		}
		for _, e := range policy.ProtectEntries() {
			if id := EntryProbeID(e); strings.HasPrefix(id, "protect:entry:") {
				out = append(out, Probe{ID: id, Group: "protect", Name: "protected entry " + e.Name, Kind: KindPlant, Want: Blocked,
					Expected: "not run by the host", Skip: "no fixture"})
			}
		}
		return out
	}
	mark := func(id string) string { return filepath.Join(f.Markers, id) }
	touch := func(id string) string { return "touch '" + mark(id) + "'" }
	repoGit := f.RepoGit
	cfg := func(extra string) string { return fixtureConfig + extra }
	evilHooks := filepath.Join(f.Repo, ".box-evil-hooks")
	evilGit := filepath.Join(f.Repo, ".box-evil-git")
	hook := func(id string) string { return "#!/bin/sh\n" + touch(id) + "\nexit 0\n" }
	probe := func(id, name, host, dir string, plant ...PlantFile) Probe {
		p := Probe{ID: "protect:" + id, Group: "protect", Name: name, Kind: KindPlant, Want: Blocked,
			Expected: "not run by the host", Targets: []string{plant[0].Path}, Plant: plant, Host: host, HostDir: dir, Marker: mark(id),
			Original: f.Orig[plant[0].Path]}
		if in.Facts.Git == "" && strings.HasPrefix(host, "git") {
			p.Skip = "git not on the host"
		}
		return p
	}
	out = append(out,
		probe("hook", "git hook (.git/hooks)", HostGitCommit, f.Repo,
			PlantFile{Path: filepath.Join(repoGit, "hooks", "pre-commit"), Content: hook("hook"), Mode: 0o755}),
		probe("fsmonitor", "git core.fsmonitor", HostGitStatus, f.Repo,
			PlantFile{Path: filepath.Join(repoGit, "config"), Content: cfg("\tfsmonitor = \"" + touch("fsmonitor") + "; false\"\n")}),
		probe("hookspath", "git core.hooksPath", HostGitCommit, f.Hp,
			PlantFile{Path: filepath.Join(f.HpGit, "config"), Content: cfg("\thooksPath = " + evilHooks + "\n")},
			PlantFile{Path: evilHooks, Dir: true},
			PlantFile{Path: filepath.Join(evilHooks, "pre-commit"), Content: hook("hookspath"), Mode: 0o755}),
		probe("nested-config", "nested repository's config", HostGitStatus, f.Nested,
			PlantFile{Path: filepath.Join(f.Nested, ".git", "config"), Content: cfg("\tfsmonitor = \"" + touch("nested-config") + "; false\"\n")}),
		probe("worktree-pointer", "worktree .git pointer", HostGitStatus, f.Wt,
			PlantFile{Path: filepath.Join(f.Wt, ".git"), Content: "gitdir: " + evilGit + "\n"},
			PlantFile{Path: evilGit, Dir: true}, PlantFile{Path: filepath.Join(evilGit, "objects"), Dir: true},
			PlantFile{Path: filepath.Join(evilGit, "refs"), Dir: true},
			PlantFile{Path: filepath.Join(evilGit, "HEAD"), Content: "ref: refs/heads/main\n"},
			PlantFile{Path: filepath.Join(evilGit, "config"), Content: cfg("\tfsmonitor = \"" + touch("worktree-pointer") + "; false\"\n")}),
		probe("envrc", ".envrc (direnv)", HostDirenv, f.Repo,
			PlantFile{Path: filepath.Join(f.Repo, ".envrc"), Content: touch("envrc") + "\n"}),
		probe("vscode-task", ".vscode folderOpen task", HostVSCodeOpen, f.Repo,
			PlantFile{Path: filepath.Join(f.Repo, ".vscode", "tasks.json"), Content: `{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":` + jsonString(touch("vscode-task")) + `,"runOptions":{"runOn":"folderOpen"}}]}` + "\n"}),
		probe("agent-settings", "agent settings hooks", HostClaudeStart, f.Repo,
			PlantFile{Path: filepath.Join(f.Repo, ".claude", "settings.json"), Content: `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":` + jsonString(touch("agent-settings")) + `}]}]}}` + "\n"}),
	)
	// A rebase stopped with an exec line to do: .git stays writable (commits, rebases
	// inside), so the plant lands; the post-run audit must take it away before the
	// host's git rebase --continue.
	rm := filepath.Join(repoGit, "rebase-merge")
	rb := probe("rebase-exec", "rebase todo exec line", HostGitRebase, f.Repo,
		PlantFile{Path: filepath.Join(rm, "git-rebase-todo"), Content: "exec " + touch("rebase-exec") + "\n"},
		PlantFile{Path: rm, Dir: true}, PlantFile{Path: filepath.Join(rm, "head-name"), Content: "detached HEAD\n"},
		PlantFile{Path: filepath.Join(rm, "onto"), Content: f.Commit + "\n"}, PlantFile{Path: filepath.Join(rm, "orig-head"), Content: f.Commit + "\n"},
		PlantFile{Path: filepath.Join(rm, "interactive")}, PlantFile{Path: filepath.Join(rm, "done")})
	rb.AuditOnly = true
	hl := probe("home-link", "dotfile the home links to", HostShellRc, f.Repo,
		PlantFile{Path: f.Dotfile, Content: touch("home-link") + "\n"})
	if f.HomeLink == "" {
		hl.Skip = "no link in the home (it could not be made)"
	}
	hl.Targets = []string{f.HomeLink, f.Dotfile}
	hd := probe("home-dotdir-link", "dotfile a link in a dot-directory of the home names", HostShellRc, f.Repo,
		PlantFile{Path: f.DotdirFile, Content: touch("home-dotdir-link") + "\n"})
	hd.Targets = []string{f.DotdirLink, f.DotdirFile}
	// Not there at launch: creatable (with its directory), then taken away.
	hm := probe("home-missing-link", "dotfile a dangling home link names, in a directory not made yet", HostShellRc, f.Repo,
		PlantFile{Path: f.MissingFile, Content: touch("home-missing-link") + "\n"}, PlantFile{Path: filepath.Dir(f.MissingFile), Dir: true})
	hm.Targets, hm.AuditOnly = []string{f.MissingLink, f.MissingFile}, true
	// Agent settings in a plain directory of the repository (no top): an agent started
	// there obeys them; creatable, then taken away.
	pkg := filepath.Join(f.Repo, "pkg")
	sd := probe("subdir-agent-settings", "agent settings hooks in a plain subdirectory", HostClaudeStart, pkg,
		PlantFile{Path: filepath.Join(pkg, ".claude", "settings.json"), Content: `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":` + jsonString(touch("subdir-agent-settings")) + `}]}]}}` + "\n"},
		PlantFile{Path: filepath.Join(pkg, ".claude"), Dir: true})
	sd.AuditOnly = true
	if f.DotdirLink == "" || f.MissingLink == "" {
		hd.Skip, hm.Skip = "no link in the home (it could not be made)", "no link in the home (it could not be made)"
	}
	// hooks/ is read-only; the script its post-commit links to, in the tree, must be too.
	hk := probe("hook-link", "script a git hook links to", HostGitCommit, f.Repo,
		PlantFile{Path: f.HookScript, Content: hook("hook-link"), Mode: 0o755})
	// A protected path whose directory the run makes a link to the agent's state
	// directory (the instance's ~/.claude, which the sandbox writes and no root the audit
	// judged): the host's Claude Code read the sandbox's hooks as the project's settings.
	settings := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":` + jsonString(touch("link-out")) + `}]}]}}` + "\n"
	state := "box-drill-" + in.Nonce
	lo := probe("link-out", "a protected path through a link to the agent's state", HostClaudeStart, f.Nested,
		PlantFile{Path: filepath.Join(f.Nested, ".claude", "settings.json"), Content: settings},
		PlantFile{Path: filepath.Join(in.AgentStateInside, state), Dir: true},
		PlantFile{Path: filepath.Join(in.AgentStateInside, state, "settings.json"), Content: settings},
		PlantFile{Path: filepath.Join(f.Nested, ".claude"), Link: filepath.Join(in.AgentState, state)})
	lo.AuditOnly = true // the link lands (the sandbox's own tree); the audit must take it away
	if in.AgentState == "" || in.AgentStateInside == "" {
		lo.Skip = "no agent state directory"
	}
	// A repository the protected set's scan does not reach (in node_modules; past its
	// bound the same): its .envrc is creatable, and the post-run audit must take it away
	// (hostile review, session 15: it watched only the tops the scan had found).
	un := probe("unscanned-envrc", ".envrc of a repository the scan does not reach (node_modules)", HostDirenv, f.Unscanned,
		PlantFile{Path: filepath.Join(f.Unscanned, ".envrc"), Content: touch("unscanned-envrc") + "\n"})
	un.AuditOnly = true
	// The same repository's config (writable: not scanned; in the Landlock mode every
	// config is) gets core.worktree = ../sub, which runs nothing itself but moves its
	// relative core.hooksPath to sub/.githooks, where the sandbox puts a pre-commit
	// (hostile review, session 15: the audit watched only the .git entry's .githooks).
	wtHooks := filepath.Join(f.Unscanned, "sub", ".githooks")
	wh := probe("worktree-hooks", "core.worktree moving a relative core.hooksPath", HostGitCommit, f.Unscanned,
		PlantFile{Path: filepath.Join(wtHooks, "pre-commit"), Content: hook("worktree-hooks"), Mode: 0o755},
		PlantFile{Path: f.UnscannedConfig(), Content: f.Orig[f.UnscannedConfig()] + "\tworktree = ../sub\n"},
		PlantFile{Path: wtHooks, Dir: true})
	wh.AuditOnly = true
	// The same repository's config gets a configured hook (git 2.54 and later): the
	// audit knew only git 2.39's keys (hostile review, session 16). Planted after the
	// worktree-hooks row's line, which it keeps (one file, two rows).
	ch := probe("config-hook", "git 2.54 configured hook (hook.NAME.command)", HostGitConfigHook, f.Unscanned,
		PlantFile{Path: f.UnscannedConfig(), Content: f.Orig[f.UnscannedConfig()] + "\tworktree = ../sub\n" + configHookSection + touch("config-hook") + "\n[gc]\n\trecentObjectsHook = " + touch("config-hook") + "\n"})
	ch.AuditOnly = true
	// Another such repository: the sandbox removes its .git, so it is no longer a work
	// tree when the audit looks again, and then writes its .envrc (hostile review,
	// session 15: the snapshot after watched only the tops it found itself).
	dg := probe("degit-envrc", ".envrc of a repository whose .git the run removed", HostDirenv, f.Degit,
		PlantFile{Path: filepath.Join(f.Degit, ".envrc"), Content: touch("degit-envrc") + "\n"},
		PlantFile{Path: filepath.Join(f.Degit, ".git"), Remove: true})
	dg.AuditOnly = true
	out = append(out, rb, hl, hd, hm, sd, hk, lo, un, wh, dg, ch)
	return append(out, entryProbes(in, probe)...)
}

// attackProbes are the protected entries an attack row above plants in (by entry name):
// what the host's tool does with the plant is shown, not only that it was refused.
var attackProbes = []struct{ entry, id string }{
	{"git:hooks", "hook"}, {"git:config", "fsmonitor"}, {"git:pointer", "worktree-pointer"}, {"git:nested", "nested-config"},
	{"home:link", "home-link"}, {"git:hook-link", "hook-link"},
	{".envrc", "envrc"}, {".vscode", "vscode-task"}, {".claude/settings.json", "agent-settings"},
}

// attackProbe is the attack row that plants in the entry named entry: a slice searched,
// not a map built at every start of box (issue 24).
func attackProbe(entry string) (string, bool) {
	for _, a := range attackProbes {
		if a.entry == entry {
			return a.id, true
		}
	}
	return "", false
}

// EntryProbeID is the drill row that probes the protected entry e: an attack row, or
// the row derived from the entry itself ("" for a scope the drill cannot derive a row
// for, which TestEntryProbes refuses).
func EntryProbeID(e policy.ProtectEntry) string {
	if id, ok := attackProbe(e.Name); ok {
		return "protect:" + id
	}
	switch e.Scope {
	case policy.ScopeProject, policy.ScopeGitDir, policy.ScopeHooksPath, policy.ScopeInclude, policy.ScopeEnvrcSource, policy.ScopeYarnPath, policy.ScopeMiseSource:
		return "protect:entry:" + e.Name
	}
	return ""
}

// entryProbes derives a row from every protected entry no attack row covers, from the
// entry itself (policy.ProtectEntries), so an entry is never without a probe: the
// sandbox plants in the entry's place in the fixture. Where the fixture has the path at
// launch it is read-only and the plant must be refused; where it has not (most project
// entries: box binds nothing there), the plant may land and the post-run audit must
// take it away before the host looks (AuditOnly).
func entryProbes(in Input, probe func(id, name, host, dir string, plant ...PlantFile) Probe) []Probe {
	f := in.Fixture
	mark := func(id string) string { return filepath.Join(f.Markers, id) }
	var out []Probe
	for _, e := range policy.ProtectEntries() {
		if _, ok := attackProbe(e.Name); ok {
			continue
		}
		id := strings.TrimPrefix(EntryProbeID(e), "protect:")
		if id == "" {
			continue
		}
		touch := "touch '" + mark(id) + "'"
		fsmonitor := fixtureConfig + "\tfsmonitor = \"" + touch + "; false\"\n"
		var pr Probe
		switch e.Scope {
		case policy.ScopeProject:
			target := filepath.Join(f.Repo, e.Path)
			if e.Dir {
				target = filepath.Join(target, "box-drill-plant")
			}
			pr = probe(id, "protected entry "+e.Name, "", f.Repo,
				PlantFile{Path: target, Content: touch + "\n"}, PlantFile{Path: filepath.Dir(target), Dir: true})
			pr.AuditOnly = true // absent at launch: creatable, then taken away
		case policy.ScopeGitDir:
			dir := f.RepoGit
			if e.Only == policy.LinkedGitDir {
				dir = filepath.Join(f.RepoGit, "worktrees", "wt")
			}
			pr = probe(id, "protected entry "+e.Name, HostGitStatus, f.Repo, PlantFile{Path: filepath.Join(dir, e.Path), Content: fsmonitor})
			// Absent at launch without a placeholder (config.worktree where the config
			// does not enable it): creatable, then taken away or never read.
			pr.AuditOnly = e.Absent == policy.NoPlaceholder && f.Orig[filepath.Join(dir, e.Path)] == ""
		case policy.ScopeHooksPath:
			pr = probe(id, "protected entry "+e.Name, HostGitCommit, f.Hp,
				PlantFile{Path: filepath.Join(f.HpHooks, "pre-commit"), Content: "#!/bin/sh\n" + touch + "\nexit 0\n", Mode: 0o755})
		case policy.ScopeInclude:
			pr = probe(id, "protected entry "+e.Name, HostGitStatus, f.Hp, PlantFile{Path: f.HpInclude, Content: "[core]\n\tfsmonitor = \"" + touch + "; false\"\n"})
		case policy.ScopeEnvrcSource:
			// Repo's .envrc loads .envrc.local if it exists: absent at launch, creatable,
			// then taken away before the host's direnv would run it.
			pr = probe(id, "protected entry "+e.Name, "", f.Repo, PlantFile{Path: filepath.Join(f.Repo, ".envrc.local"), Content: touch + "\n"})
			pr.AuditOnly = true
		case policy.ScopeYarnPath:
			// web/.yarnrc.yml names a release that is absent at launch: creatable, then
			// taken away before the host's yarn would run it.
			target := filepath.Join(f.Repo, "web", ".yarn", "releases", "box-drill-yarn.cjs")
			pr = probe(id, "protected entry "+e.Name, "", f.Repo,
				PlantFile{Path: target, Content: touch + "\n"}, PlantFile{Path: filepath.Dir(target), Dir: true})
			pr.AuditOnly = true
		case policy.ScopeMiseSource:
			// web/mise.toml sources a script absent at launch: creatable, then taken
			// away before the host's mise hook-env would source it.
			pr = probe(id, "protected entry "+e.Name, "", f.Repo, PlantFile{Path: filepath.Join(f.Repo, "web", "box-drill-env.sh"), Content: touch + "\n"})
			pr.AuditOnly = true
		}
		out = append(out, pr)
	}
	return out
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// probePlant (inside) writes the plant's files; seen = the first one (the protected
// target) holds the plant afterwards. In place first, then by writing a temporary file
// beside it and renaming it over (what editors and git do).
func probePlant(files []PlantFile) (bool, string) {
	if len(files) == 0 {
		return false, "nothing to plant"
	}
	for _, f := range files[1:] {
		if f.Remove {
			os.RemoveAll(f.Path)
		} else if f.Link != "" {
			os.Symlink(f.Link, f.Path)
		} else if f.Dir {
			os.MkdirAll(f.Path, 0o755)
		} else {
			os.WriteFile(f.Path, []byte(f.Content), os.FileMode(f.Mode|0o600))
		}
	}
	t := files[0]
	mode := os.FileMode(t.Mode | 0o644)
	err1 := os.WriteFile(t.Path, []byte(t.Content), mode)
	if err1 == nil {
		return true, "written in place"
	}
	tmp := filepath.Join(filepath.Dir(t.Path), ".box-drill-plant")
	err2 := os.WriteFile(tmp, []byte(t.Content), mode)
	if err2 == nil {
		if err2 = os.Rename(tmp, t.Path); err2 == nil {
			return true, "written by rename"
		}
		os.Remove(tmp)
	}
	return false, fmt.Sprintf("refused (%s; by rename: %s)", errText(err1), errText(err2))
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err.Error()
	}
	return err.Error()
}

// settlePlant (outside) checks the protected target, then does what the host's tool
// would, and looks for the marker. It returns whether the host ran the plant and what
// it saw.
func settlePlant(pr Probe) (onHost bool, detail string) {
	if len(pr.Plant) == 0 {
		return false, ""
	}
	target := pr.Plant[0]
	cur, _ := os.ReadFile(target.Path)
	switch {
	case string(cur) == target.Content:
		detail = "planted"
	case string(cur) == pr.Original:
		detail = "unchanged"
	case pr.Host == HostGitConfigHook && strings.HasPrefix(string(cur), pr.Original) &&
		strings.Contains(target.Content, pr.Marker) && !strings.Contains(string(cur), pr.Marker):
		// The audit cut the planted keys from the live file (its other bytes kept):
		// nothing of the plant is left to run.
		return false, "the planted keys were cut from the config; the host's " + pr.Host + " ran nothing"
	default:
		// Not the drill's plant: never run what someone else put there.
		return true, "changed by someone else (not run)"
	}
	os.Remove(pr.Marker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	switch pr.Host {
	case HostGitCommit:
		err = hostRun(ctx, pr.HostDir, "git", "-c", "user.name=box drill", "-c", "user.email=drill@box.invalid", "commit", "-q", "--allow-empty", "-m", "box drill")
	case HostGitStatus:
		err = hostRun(ctx, pr.HostDir, "git", "status", "--porcelain")
	case HostDirenv:
		err = hostRun(ctx, pr.HostDir, "sh", ".envrc")
	case HostGitRebase:
		err = hostRun(ctx, pr.HostDir, "git", "rebase", "--continue")
	case HostGitConfigHook:
		err = runConfigHooks(ctx, pr.HostDir, "pre-commit")
		// git gc (git 2.42 and later; commit runs it automatically past its threshold)
		// runs every gc.recentObjectsHook through the shell.
		c := exec.CommandContext(ctx, "git", "config", "--get-all", "gc.recentObjectsHook")
		c.Dir, c.Env = pr.HostDir, hostEnv(pr.HostDir)
		if out, gerr := c.Output(); gerr == nil {
			for _, cmd := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if cmd != "" {
					err = errors.Join(err, hostRun(ctx, pr.HostDir, "sh", "-c", cmd))
				}
			}
		}
	case HostShellRc:
		err = hostRun(ctx, pr.HostDir, "sh", "-c", `. "$0"`, pr.Targets[0])
	case HostVSCodeOpen:
		var tasks struct {
			Tasks []struct {
				Command    string `json:"command"`
				RunOptions struct {
					RunOn string `json:"runOn"`
				} `json:"runOptions"`
			} `json:"tasks"`
		}
		if json.Unmarshal(cur, &tasks) == nil {
			for _, t := range tasks.Tasks {
				if t.RunOptions.RunOn == "folderOpen" {
					err = errors.Join(err, hostRun(ctx, pr.HostDir, "sh", "-c", t.Command))
				}
			}
		}
	case HostClaudeStart:
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if json.Unmarshal(cur, &s) == nil {
			for _, m := range s.Hooks["SessionStart"] {
				for _, h := range m.Hooks {
					err = errors.Join(err, hostRun(ctx, pr.HostDir, "sh", "-c", h.Command))
				}
			}
		}
	}
	_ = err // the tool's own failure does not matter: the marker does
	if pr.Host == "" {
		// No host tool is run for this entry: a plant left outside is the breach.
		return detail == "planted", detail
	}
	if _, err := os.Lstat(pr.Marker); err == nil {
		return true, detail + "; the host's " + pr.Host + " RAN IT"
	}
	return detail == "planted", detail + "; the host's " + pr.Host + " ran nothing"
}

// configHookSection is the config-hook row's plant, before its command.
const configHookSection = "[hook \"box-drill\"]\n\tevent = pre-commit\n\tcommand = "

// runConfigHooks runs, in dir, the configured hooks (git 2.54's hook.NAME.command)
// whose hook.NAME.event lists event, through the shell, as such a git does; the host's
// git config reads the keys whatever its version.
func runConfigHooks(ctx context.Context, dir, event string) error {
	c := exec.CommandContext(ctx, "git", "config", "--null", "--get-regexp", `^hook\.`)
	c.Dir, c.Env = dir, hostEnv(dir)
	out, err := c.Output()
	if err != nil {
		return err
	}
	cmds, events := map[string]string{}, map[string][]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		if !strings.HasPrefix(k, "hook.") {
			continue
		}
		i := strings.LastIndexByte(k, '.')
		name, key := k[len("hook."):i], k[i+1:]
		switch key {
		case "command":
			cmds[name] = v
		case "event":
			if v == "" {
				events[name] = nil
			} else {
				events[name] = append(events[name], v)
			}
		}
	}
	for name, cmd := range cmds {
		if slices.Contains(events[name], event) {
			err = errors.Join(err, hostRun(ctx, dir, "sh", "-c", cmd))
		}
	}
	return err
}

func hostRun(ctx context.Context, dir string, argv ...string) error {
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = dir
	c.Env = hostEnv(dir)
	return c.Run()
}

// hostEnv is the environment of what the drill runs on the host in dir: git never asks,
// and never looks for a repository above the drill's own directory (.box-drill-*) that
// holds dir. A fixture repository whose git directory was gone (moved aside by another
// run's audit, or removed by the sandbox) made git find the operator's repository around
// it: the drill committed their staged work there as "box drill", and would have run
// rebase --continue on their rebase (field review, session 20;
// TestSettlePlantNotInOperatorsRepo).
func hostEnv(dir string) []string {
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	for d := filepath.Clean(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		if strings.HasPrefix(filepath.Base(d), ".box-drill-") {
			return append(env, "GIT_CEILING_DIRECTORIES="+filepath.Dir(d))
		}
	}
	return env
}
