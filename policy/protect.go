package policy

// The protected set of the bwrap backend, as data: the paths in and around the working
// directory that host tools execute or obey on their own (git hooks and config, direnv's
// .envrc, an editor's tasks, an agent's settings), kept read-only inside the sandbox so
// nothing the sandbox writes runs outside it. backend/bwrap/protect scans a tree and
// builds the concrete paths from these entries; profiles check protect_drop against
// them; the drill plants in them.

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ProtectScope says what an entry's path is relative to.
type ProtectScope string

const (
	// ScopeGitDir: relative to every git directory found (a repository's .git, each
	// .git/modules/* of a submodule, each .git/worktrees/* of a linked worktree).
	ScopeGitDir ProtectScope = "gitdir"
	// ScopePointer: the .git file of a worktree or submodule (a "gitdir: PATH" line).
	ScopePointer ProtectScope = "pointer"
	// ScopeNested: the .git directory of a repository nested in the working directory (not
	// a submodule or worktree of its repository): read-only as a whole.
	ScopeNested ProtectScope = "nested"
	// ScopeHooksPath: a directory a repository's core.hooksPath names inside the working
	// directory (husky's .husky/_, a project's .githooks).
	ScopeHooksPath ProtectScope = "hookspath"
	// ScopeInclude: a file a repository's config includes, inside the working directory.
	ScopeInclude ProtectScope = "include"
	// ScopeEnvrcSource: a file in the working directory that a project's .envrc has
	// direnv load (source_env, source_env_if_exists, dotenv, dotenv_if_exists, source).
	ScopeEnvrcSource ProtectScope = "envrc-source"
	// ScopeYarnPath: a file in the working directory that a yarn rc (.yarnrc.yml's
	// yarnPath and plugins, .yarnrc's yarn-path) has yarn run on every command, or that
	// pnpm's config (pnpm-workspace.yaml's or .npmrc's pnpmfile) has pnpm require.
	ScopeYarnPath ProtectScope = "yarn-path"
	// ScopeMiseSource: a file in the working directory that a mise config's [env] has
	// mise source or load (_.source, _.file).
	ScopeMiseSource ProtectScope = "mise-source"
	// ScopeProject: relative to the working directory and to the top of every repository
	// nested in it.
	ScopeProject ProtectScope = "project"
	// ScopeHomeLink: a file or directory in the working directory that an entry of your home
	// links to (a dotfiles repository: ~/.bashrc -> dotfiles/bashrc).
	ScopeHomeLink ProtectScope = "homelink"
	// ScopeHookLink: a file in the working directory that a hook links to (a repository's
	// hooks/NAME, or one in its core.hooksPath, is a link to scripts/NAME).
	ScopeHookLink ProtectScope = "hooklink"
)

// Placeholder is what box puts at a protected path that is absent at launch, so the
// sandbox cannot create it to effect during the run.
type Placeholder string

const (
	// NoPlaceholder: an absent path stays absent and creatable; the post-run audit
	// moves aside what the run created there.
	NoPlaceholder Placeholder = ""
	// EmptyDir: an empty directory (git's own hooks/ after git init).
	EmptyDir Placeholder = "dir"
	// EmptyFile: an empty file (an empty git config file is valid and sets nothing).
	EmptyFile Placeholder = "file"
	// SelfCommonDir: a commondir file naming the directory itself ("."), which is what
	// git assumes when there is none (an empty commondir file makes git die).
	SelfCommonDir Placeholder = "commondir"
)

// Temporary reports whether box removes the placeholder after the run. Only commondir is
// removed: with it, `git rev-parse --git-common-dir` prints an absolute path, which
// scripts comparing it with --git-dir take for a linked worktree. An empty hooks/ (what
// git init makes) and an empty config.worktree change nothing and stay.
func (p Placeholder) Temporary() bool { return p == SelfCommonDir }

// ProtectEntry is one rule of the protected set.
type ProtectEntry struct {
	// Name is how the entry is named in profiles (protect_drop) and in --dry-run: the
	// relative path for project entries, "git:PATH" for git directory entries.
	Name  string
	Scope ProtectScope
	Path  string // relative to the scope ("" for Pointer)
	Dir   bool   // a directory (protected with everything in it)
	// Why says what executes or obeys it.
	Why string
	// Absent is what box does when the path does not exist at launch.
	Absent Placeholder
	// Only limits a GitDir entry to main git directories (hooks and config live in the
	// common directory; git never reads them from a linked worktree's) or to linked ones
	// (.git/worktrees/*: the gitdir back-link only exists there). "" is both.
	Only GitDirKind
	// AuditAsFile: a git entry the post-run audit watches as a plain file in every main
	// git directory (the other git entries it reads by meaning: config, hooks, pointers).
	AuditAsFile bool
	// Anywhere: a project entry that a tool started in any directory obeys (an agent, an
	// editor opening a folder, direnv on cd), not only at a repository's top: the
	// post-run audit watches it in every directory of the tree outside node_modules. A
	// hostile review (session 18) planted pkg/.claude/settings.json and pkg/.mcp.json
	// from a run in a repository whose pkg/ is a plain directory; a later, wider run
	// started in pkg/ obeyed them.
	Anywhere bool
}

// GitDirKind tells a repository's (or submodule's) own git directory from a linked
// worktree's.
type GitDirKind string

const (
	MainGitDir   GitDirKind = "main"
	LinkedGitDir GitDirKind = "linked"
)

// protectEntries is THE protected set. Every entry says what executes or obeys it; docs/bwrap.md
// explains the choices (and what is deliberately not here).
var protectEntries = []ProtectEntry{
	// Inside every git directory.
	{Name: "git:hooks", Scope: ScopeGitDir, Path: "hooks", Dir: true, Absent: EmptyDir, Only: MainGitDir,
		Why: "git runs hooks/<name> on commit, checkout, merge, rebase, push, am"},
	{Name: "git:config", Scope: ScopeGitDir, Path: "config", Absent: EmptyFile, Only: MainGitDir,
		Why: "git obeys it on every command: core.fsmonitor runs on each git status, core.hooksPath, core.pager, core.sshCommand, aliases, filters, diff and merge drivers, credential helpers, include.path"},
	// Absent, it gets a placeholder only where the config enables it (Build): git
	// never reads it otherwise, and the config is protected.
	{Name: "git:config.worktree", Scope: ScopeGitDir, Path: "config.worktree", Absent: EmptyFile,
		Why: "git reads it like config when extensions.worktreeConfig is set"},
	{Name: "git:commondir", Scope: ScopeGitDir, Path: "commondir", Absent: SelfCommonDir,
		Why: "redirects git to another directory's config and hooks"},
	{Name: "git:lazygit.yml", Scope: ScopeGitDir, Path: "lazygit.yml", Only: MainGitDir, AuditAsFile: true,
		Why: "lazygit reads a repository's .git/lazygit.yml over your own config: its pager, os.edit and customCommands run as you browse"},
	{Name: "git:gitdir", Scope: ScopeGitDir, Path: "gitdir", Only: LinkedGitDir,
		Why: "a linked worktree's back-link: git worktree repair writes a .git file where it points, prune deletes by it"},
	{Name: "git:pointer", Scope: ScopePointer,
		Why: "a worktree's or submodule's .git file: git takes its config and hooks from the directory it names"},
	{Name: "git:hooksPath", Scope: ScopeHooksPath, Dir: true, Absent: EmptyDir,
		Why: "a repository's core.hooksPath (or, without one, your global config's) names it: git runs the hooks in it (an empty directory, invisible to git status, is put where it is missing)"},
	{Name: "git:include", Scope: ScopeInclude, Absent: EmptyFile,
		Why: "a repository's config includes it (include.path, includeIf): git obeys it like the config (an empty file, which sets nothing, is put where it is missing)"},
	// Whole, not part by part: every bind costs launch time (bwrap's mounts grow
	// superlinearly), and a clone nested in the project (not a submodule) is rarely
	// committed to from the agent's run; commit in it from a box run there.
	// A dotfiles repository: what the home links to is live configuration, run by the
	// next shell, git or editor, whatever its name in the tree.
	{Name: "home:link", Scope: ScopeHomeLink,
		Why: "your home links to it (~/.NAME, a file in ~/.NAME/ or ~/bin/, ~/.config/..., ~/.local/bin/NAME; a dotfiles repository) or your global git config includes it or names it init.templateDir: your shell, ssh, git, editor, session or PATH runs it outside the sandbox"},
	{Name: "git:hook-link", Scope: ScopeHookLink,
		Why: "a git hook links to it (hooks/pre-commit -> ../../scripts/pre-commit): git runs it on the hook's event"},
	{Name: "git:nested", Scope: ScopeNested, Dir: true,
		Why: "a repository nested in the working directory: git obeys its config and runs its hooks when you work in it (read-only whole inside)"},

	// The project: what host tools execute or obey when the operator opens or enters it.
	{Name: ".envrc", Scope: ScopeProject, Anywhere: true, Path: ".envrc", Why: "direnv runs it on cd (once allowed, or at once under a whitelisted prefix)"},
	// direnv's layout directory: nix-direnv evals its cached flake-profile-*.rc and
	// nix-profile-*.rc there on cd while they are newer than flake.nix, and puts its bin/
	// first in PATH (hostile review, session 19: an allowed `use flake` ran the sandbox's
	// rc). direnv writes it on the host; nothing inside needs to.
	{Name: ".direnv", Scope: ScopeProject, Anywhere: true, Path: ".direnv", Dir: true, Why: "direnv's layout directory: nix-direnv evals its cached *-profile-*.rc on cd and puts its bin/ first in PATH; layout python and go put theirs there too"},
	// Nix's entry points: what .envrc's "use flake" and "use nix" hand the host's shell
	// to, and what box run --devshell evaluates on the host (a hostile review planted a
	// flake whose input path:~/.ssh the host's Nix copied into the world-readable store,
	// where the next sandbox read the private key).
	{Name: "flake.nix", Scope: ScopeProject, Path: "flake.nix", Why: "the host's Nix evaluates it as you (nix develop, direnv's use flake, box run --devshell): its inputs are fetched with your files and credentials into the world-readable store, and nix develop and direnv run its shellHook"},
	{Name: "flake.lock", Scope: ScopeProject, Path: "flake.lock", Why: "the host's Nix fetches the sources it pins (any path or URL) as you when it evaluates flake.nix"},
	{Name: "shell.nix", Scope: ScopeProject, Path: "shell.nix", Why: "nix-shell and direnv's use nix evaluate it as you and run its shellHook"},
	{Name: "default.nix", Scope: ScopeProject, Path: "default.nix", Why: "nix-shell and nix-build read it when there is no shell.nix; direnv's use nix too"},
	{Name: ".vscode", Scope: ScopeProject, Anywhere: true, Path: ".vscode", Dir: true, Why: "VS Code runs tasks with runOn folderOpen and obeys settings naming interpreters, shells and formatters"},
	{Name: ".idea", Scope: ScopeProject, Anywhere: true, Path: ".idea", Dir: true, Why: "JetBrains IDEs run startup tasks, run configurations and external tools defined here"},
	{Name: ".zed", Scope: ScopeProject, Anywhere: true, Path: ".zed", Dir: true, Why: "Zed obeys project settings naming language-server binaries and tasks"},
	{Name: ".devcontainer", Scope: ScopeProject, Anywhere: true, Path: ".devcontainer", Dir: true, Why: "dev containers run initializeCommand on the host, and build what it names"},
	{Name: ".mcp.json", Scope: ScopeProject, Anywhere: true, Path: ".mcp.json", Why: "Claude Code starts the MCP servers it names"},
	{Name: ".claude/settings.json", Scope: ScopeProject, Anywhere: true, Path: ".claude/settings.json", Why: "Claude Code on the host runs its hooks and obeys its permissions"},
	{Name: ".claude/settings.local.json", Scope: ScopeProject, Anywhere: true, Path: ".claude/settings.local.json", Why: "the same, for the local settings"},
	{Name: ".claude/commands", Scope: ScopeProject, Anywhere: true, Path: ".claude/commands", Dir: true, Why: "slash commands the host's Claude Code obeys"},
	{Name: ".claude/agents", Scope: ScopeProject, Anywhere: true, Path: ".claude/agents", Dir: true, Why: "subagent definitions the host's Claude Code obeys"},
	{Name: ".claude/hooks", Scope: ScopeProject, Anywhere: true, Path: ".claude/hooks", Dir: true, Why: "scripts the settings' hooks commonly run"},
	{Name: ".claude/skills", Scope: ScopeProject, Anywhere: true, Path: ".claude/skills", Dir: true, Why: "skills (instructions and scripts) the host's Claude Code loads"},
	{Name: ".cursor", Scope: ScopeProject, Anywhere: true, Path: ".cursor", Dir: true, Why: "Cursor starts the MCP servers in .cursor/mcp.json and obeys its rules"},
	{Name: ".gemini", Scope: ScopeProject, Anywhere: true, Path: ".gemini", Dir: true, Why: "Gemini CLI obeys settings.json (MCP servers, tools)"},
	{Name: ".codex", Scope: ScopeProject, Anywhere: true, Path: ".codex", Dir: true, Why: "Codex obeys a project's config.toml (MCP servers, sandbox settings)"},
	// The grok template's agent: its folder trust is per folder, so a trusted project's
	// .grok/config.toml rewritten by a box run started its MCP server at the next plain
	// grok mcp doctor (hostile review, session 20, grok 1.0.41).
	{Name: ".grok", Scope: ScopeProject, Anywhere: true, Path: ".grok", Dir: true, Why: "the xAI Grok CLI starts the MCP servers and plugins, and runs the hooks, of .grok/config.toml in a folder you trusted once (its trust is per folder, not per content)"},
	// The kimi template's agent loads project skills from .kimi/skills (before
	// .claude/skills and .codex/skills) and .agents/skills, the agents' shared place, and
	// obeys .kimi/AGENTS.md (read in kimi-cli's source, session 20: skill/__init__.py,
	// soul/agent.py).
	{Name: ".kimi", Scope: ScopeProject, Anywhere: true, Path: ".kimi", Dir: true, Why: "Kimi CLI loads the skills (instructions and scripts) in .kimi/skills and obeys .kimi/AGENTS.md"},
	{Name: ".agents/skills", Scope: ScopeProject, Anywhere: true, Path: ".agents/skills", Dir: true, Why: "skills (instructions and scripts) that Kimi CLI and other agents load from the agents' shared place"},
	// GitHub Copilot CLI: its folder trust is per folder, not per content (read in Copilot
	// CLI 1.0.102's code, hostile review, session 21: getHooksDir, the repo settings, the
	// .mcp.json/.github/mcp.json walk up, .github/skills).
	{Name: ".github/hooks", Scope: ScopeProject, Anywhere: true, Path: ".github/hooks", Dir: true, Why: "GitHub Copilot CLI runs the commands of its *.json hooks (sessionStart, preToolUse, ...) in a folder you trusted once"},
	{Name: ".github/copilot", Scope: ScopeProject, Anywhere: true, Path: ".github/copilot", Dir: true, Why: "GitHub Copilot CLI obeys settings.json and settings.local.json here: their hooks run commands"},
	{Name: ".github/mcp.json", Scope: ScopeProject, Anywhere: true, Path: ".github/mcp.json", Why: "GitHub Copilot CLI starts the MCP servers (commands) it names"},
	{Name: ".github/skills", Scope: ScopeProject, Anywhere: true, Path: ".github/skills", Dir: true, Why: "skills (instructions and scripts) GitHub Copilot CLI loads"},
	{Name: ".qwen", Scope: ScopeProject, Anywhere: true, Path: ".qwen", Dir: true, Why: "Qwen Code obeys settings.json (MCP servers, tools), as Gemini CLI does"},
	{Name: ".windsurf", Scope: ScopeProject, Anywhere: true, Path: ".windsurf", Dir: true, Why: "Windsurf obeys its rules and workflows, which can tell it to run commands"},
	{Name: "opencode.json", Scope: ScopeProject, Anywhere: true, Path: "opencode.json", Why: "opencode starts the local MCP servers (commands) it names when it opens the project"},
	{Name: "opencode.jsonc", Scope: ScopeProject, Anywhere: true, Path: "opencode.jsonc", Why: "the same, under opencode's other name"},
	{Name: ".opencode", Scope: ScopeProject, Anywhere: true, Path: ".opencode", Dir: true, Why: "opencode loads and runs the JavaScript plugins in .opencode/plugin at start, and obeys its agents and commands"},
	// Kilo Code's CLI (opencode's descendant) and extension: kilo mcp list ran the command
	// of each (hostile review, session 20, kilo 7.7.9).
	{Name: "kilo.json", Scope: ScopeProject, Anywhere: true, Path: "kilo.json", Why: "Kilo Code starts the local MCP servers (commands) it names when it opens the project"},
	{Name: "kilo.jsonc", Scope: ScopeProject, Anywhere: true, Path: "kilo.jsonc", Why: "the same, under Kilo Code's other name"},
	{Name: ".kilo", Scope: ScopeProject, Anywhere: true, Path: ".kilo", Dir: true, Why: "Kilo Code reads kilo.json and kilo.jsonc here: the MCP servers they name start"},
	{Name: ".kilocode", Scope: ScopeProject, Anywhere: true, Path: ".kilocode", Dir: true, Why: "Kilo Code starts the MCP servers in .kilocode/mcp.json and obeys its rules and workflows"},
	{Name: "crush.json", Scope: ScopeProject, Anywhere: true, Path: "crush.json", Why: "Crush starts the MCP servers and language servers (commands) it names"},
	{Name: ".crush.json", Scope: ScopeProject, Anywhere: true, Path: ".crush.json", Why: "the same, under Crush's other name"},
	{Name: ".kiro", Scope: ScopeProject, Anywhere: true, Path: ".kiro", Dir: true, Why: "Kiro runs the shell commands of its agent hooks (.kiro/hooks) on file events and starts .kiro/settings/mcp.json's servers"},
	{Name: ".amazonq", Scope: ScopeProject, Anywhere: true, Path: ".amazonq", Dir: true, Why: "Amazon Q Developer starts the MCP servers in .amazonq/mcp.json"},
	{Name: ".roo", Scope: ScopeProject, Anywhere: true, Path: ".roo", Dir: true, Why: "Roo Code starts the MCP servers in .roo/mcp.json"},
	{Name: ".continue", Scope: ScopeProject, Anywhere: true, Path: ".continue", Dir: true, Why: "Continue starts the MCP servers its project config names"},
	{Name: ".aider.conf.yml", Scope: ScopeProject, Anywhere: true, Path: ".aider.conf.yml", Why: "aider runs its lint-cmd after every edit (auto-lint is on by default) and its test-cmd"},
	{Name: ".devcontainer.json", Scope: ScopeProject, Anywhere: true, Path: ".devcontainer.json", Why: "dev containers read it like .devcontainer/devcontainer.json: initializeCommand runs on the host"},
	{Name: ".husky", Scope: ScopeProject, Path: ".husky", Dir: true, Why: "husky points core.hooksPath here: git runs these hooks"},
	{Name: ".pre-commit-config.yaml", Scope: ScopeProject, Path: ".pre-commit-config.yaml", Why: "an installed pre-commit hook runs the hooks it names"},
	{Name: "lefthook.yml", Scope: ScopeProject, Path: "lefthook.yml", Why: "an installed lefthook hook runs the commands it names"},
	{Name: ".lefthook.yml", Scope: ScopeProject, Path: ".lefthook.yml", Why: "the same, under lefthook's other name"},
	{Name: "lefthook.yaml", Scope: ScopeProject, Path: "lefthook.yaml", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook.toml", Scope: ScopeProject, Path: "lefthook.toml", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook.json", Scope: ScopeProject, Path: "lefthook.json", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook.jsonc", Scope: ScopeProject, Path: "lefthook.jsonc", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.yaml", Scope: ScopeProject, Path: ".lefthook.yaml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.toml", Scope: ScopeProject, Path: ".lefthook.toml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.json", Scope: ScopeProject, Path: ".lefthook.json", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.jsonc", Scope: ScopeProject, Path: ".lefthook.jsonc", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook-local.yml", Scope: ScopeProject, Path: "lefthook-local.yml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.yaml", Scope: ScopeProject, Path: "lefthook-local.yaml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.toml", Scope: ScopeProject, Path: "lefthook-local.toml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.json", Scope: ScopeProject, Path: "lefthook-local.json", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.jsonc", Scope: ScopeProject, Path: "lefthook-local.jsonc", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.yml", Scope: ScopeProject, Path: ".lefthook-local.yml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.yaml", Scope: ScopeProject, Path: ".lefthook-local.yaml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.toml", Scope: ScopeProject, Path: ".lefthook-local.toml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.json", Scope: ScopeProject, Path: ".lefthook-local.json", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.jsonc", Scope: ScopeProject, Path: ".lefthook-local.jsonc", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook.yml", Scope: ScopeProject, Path: ".config/lefthook.yml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.yaml", Scope: ScopeProject, Path: ".config/lefthook.yaml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.toml", Scope: ScopeProject, Path: ".config/lefthook.toml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.json", Scope: ScopeProject, Path: ".config/lefthook.json", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.jsonc", Scope: ScopeProject, Path: ".config/lefthook.jsonc", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook-local.yml", Scope: ScopeProject, Path: ".config/lefthook-local.yml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.yaml", Scope: ScopeProject, Path: ".config/lefthook-local.yaml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.toml", Scope: ScopeProject, Path: ".config/lefthook-local.toml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.json", Scope: ScopeProject, Path: ".config/lefthook-local.json", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.jsonc", Scope: ScopeProject, Path: ".config/lefthook-local.jsonc", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	// Files, not the directories: hg and jj write their own state beside them on every commit.
	{Name: ".hg/hgrc", Scope: ScopeProject, Path: ".hg/hgrc", Why: "Mercurial obeys a repository's .hg/hgrc on every hg command: [hooks] run shell commands, [extensions] load Python code, its pager and merge tools run"},
	{Name: ".hg/hgrc-not-shared", Scope: ScopeProject, Path: ".hg/hgrc-not-shared", Why: "the same, for a share-safe repository's own part of the config"},
	{Name: ".hg/sharedpath", Scope: ScopeProject, Path: ".hg/sharedpath", Why: "redirects hg to another repository, whose config it then obeys"},
	{Name: ".jj/repo/config.toml", Scope: ScopeProject, Path: ".jj/repo/config.toml", Why: "Jujutsu obeys a repository's config on every jj command (ui.pager, ui.editor, ui.diff-formatter, aliases, fix tools)"},
	{Name: ".lazygit.yml", Scope: ScopeProject, Path: ".lazygit.yml", Why: "lazygit merges a .lazygit.yml found in the repository or above it into its config: its pager and customCommands run"},
	// Vim sources these from the directory it starts in when 'exrc' is set (no trust
	// prompt: call system() ran as the operator, hostile review, session 19); Neovim
	// asks once per content, then sources .nvim.lua, .nvimrc or .exrc the same way.
	{Name: ".vimrc", Scope: ScopeProject, Anywhere: true, Path: ".vimrc", Why: "vim with 'exrc' set sources it when started here: its commands and call system() run"},
	{Name: ".exrc", Scope: ScopeProject, Anywhere: true, Path: ".exrc", Why: "the same, under the name vi, vim and Neovim read"},
	{Name: ".gvimrc", Scope: ScopeProject, Anywhere: true, Path: ".gvimrc", Why: "the same, for gvim"},
	{Name: ".nvimrc", Scope: ScopeProject, Anywhere: true, Path: ".nvimrc", Why: "Neovim with 'exrc' set sources it once trusted (a trusted file rewritten asks again, but one answer runs it)"},
	{Name: ".nvim.lua", Scope: ScopeProject, Anywhere: true, Path: ".nvim.lua", Why: "the same, as Lua"},
	// Emacs reads these from the directory of every file it opens upward: an eval form
	// runs after one answer, with no question under enable-local-variables :all (hostile
	// review, session 21, Emacs 28.2).
	{Name: ".dir-locals.el", Scope: ScopeProject, Anywhere: true, Path: ".dir-locals.el", Why: "Emacs applies its variables to every file opened at or below it: an eval form runs its Lisp after one answer (with no question under enable-local-variables :all)"},
	{Name: ".dir-locals-2.el", Scope: ScopeProject, Anywhere: true, Path: ".dir-locals-2.el", Why: "the same, under Emacs's second name (read after .dir-locals.el)"},
	// Ruby's REPLs read an rc in the directory they start in: irb the first it finds (the
	// current directory's when you have none at home), pry its local .pryrc after yours
	// (hostile review, session 21, irb 1.4.1 and pry 0.13.1 of Debian's Ruby 3.1).
	{Name: ".irbrc", Scope: ScopeProject, Anywhere: true, Path: ".irbrc", Why: "irb started here runs it as Ruby when you have no ~/.irbrc (nor ~/.config/irb/irbrc)"},
	{Name: "irb.rc", Scope: ScopeProject, Anywhere: true, Path: "irb.rc", Why: "the same, under another of the names irb reads"},
	{Name: "_irbrc", Scope: ScopeProject, Anywhere: true, Path: "_irbrc", Why: "the same, under another of the names irb reads"},
	{Name: "$irbrc", Scope: ScopeProject, Anywhere: true, Path: "$irbrc", Why: "the same, under another of the names irb reads"},
	{Name: ".pryrc", Scope: ScopeProject, Anywhere: true, Path: ".pryrc", Why: "pry started here runs it as Ruby, after your own"},
	// R reads the current directory's .Rprofile instead of yours, and its .Renviron, at
	// every start, Rscript too; renv's .Rprofile sources renv/activate.R (hostile review,
	// session 21, R 4.2.2 of Debian).
	{Name: ".Rprofile", Scope: ScopeProject, Anywhere: true, Path: ".Rprofile", Why: "R and Rscript started here run it as R code (instead of your own ~/.Rprofile)"},
	{Name: ".Renviron", Scope: ScopeProject, Anywhere: true, Path: ".Renviron", Why: "R and Rscript started here set its variables: R_PROFILE_USER names R code they run, R_LIBS the packages they load"},
	{Name: "renv/activate.R", Scope: ScopeProject, Anywhere: true, Path: "renv/activate.R", Why: "renv's .Rprofile sources it at every R start"},
	// gdb's auto-load safe-path trusts a path, not a content (hostile review, session 21,
	// Debian's gdb 13.1).
	{Name: ".gdbinit", Scope: ScopeProject, Anywhere: true, Path: ".gdbinit", Why: "gdb started here runs its commands (shell, python) when your auto-load safe-path covers the directory"},
	{Name: ".helix", Scope: ScopeProject, Path: ".helix", Dir: true, Why: "Helix obeys .helix/languages.toml and config.toml: the language servers and formatters they name start when you open a file"},
	{Name: ".clinerules", Scope: ScopeProject, Path: ".clinerules", Dir: true, Why: "Cline runs the hook scripts in .clinerules/hooks and obeys its rules and workflows"},
	{Name: ".gitmodules", Scope: ScopeProject, Path: ".gitmodules", Why: "git submodule clones the URLs and writes the paths it names"},
	// git-lfs reads .lfsconfig at the top of the work tree for its server URLs: a planted
	// lfs.url or lfs.pushurl sends the next git push's LFS objects, and the credentials
	// git credential fill gives for that URL, where it names (hostile review, session 12).
	{Name: ".lfsconfig", Scope: ScopeProject, Path: ".lfsconfig", Why: "git-lfs obeys its lfs.url, lfs.pushurl, remote.*.lfsurl and lfs.<url>.access on every fetch and push: LFS objects, and the credentials for that URL, go to the server it names"},
	// npm reads the .npmrc of the nearest directory holding a package.json: pkg/.npmrc in
	// a plain pkg/ ran its script-shell at the host's next npm exec there (hostile review,
	// session 21, npm 11.19.1).
	{Name: ".npmrc", Scope: ScopeProject, Anywhere: true, Path: ".npmrc", Why: "npm obeys it on every command (script-shell, node-options=--require, registry)"},
	// Yarn reads these in the directory it runs in and every one above (hostile review,
	// session 20: a pkg/.yarnrc.yml planted in a plain subdirectory ran at the host's next
	// yarn there).
	{Name: ".yarnrc.yml", Scope: ScopeProject, Anywhere: true, Path: ".yarnrc.yml", Why: "yarn runs the file yarnPath names instead of itself"},
	{Name: ".yarnrc", Scope: ScopeProject, Anywhere: true, Path: ".yarnrc", Why: "yarn classic runs yarn-path instead of itself"},
	// pnpm requires its pnpmfile on every command, pnpm --version among them, from the
	// workspace root (the nearest pnpm-workspace.yaml) or the nearest directory holding a
	// package.json (hostile review, session 21, pnpm 10.34.9).
	{Name: ".pnpmfile.cjs", Scope: ScopeProject, Anywhere: true, Path: ".pnpmfile.cjs", Why: "pnpm loads and runs it on every command (pnpm --version too), and its hooks on install"},
	{Name: "pnpm-workspace.yaml", Scope: ScopeProject, Anywhere: true, Path: "pnpm-workspace.yaml", Why: "pnpm obeys its settings on every command: pnpmfile names JavaScript it runs (on pnpm --version too), scriptShell the shell of every script"},
	{Name: ".tool-versions", Scope: ScopeProject, Anywhere: true, Path: ".tool-versions", Why: "asdf and mise pick (and may install) the tools it names on cd"},
	// mise reads all of its names from the directory it runs in upward and trusts a
	// config by its path: a trusted one rewritten runs without a question, and
	// pkg/mise.local.toml went unwatched in a plain pkg/ (hostile review, session 20).
	{Name: "mise.toml", Scope: ScopeProject, Anywhere: true, Path: "mise.toml", Why: "mise runs its enter hooks and env scripts on cd (once trusted)"},
	{Name: ".mise.toml", Scope: ScopeProject, Anywhere: true, Path: ".mise.toml", Why: "the same, under mise's other name"},
	{Name: "mise.local.toml", Scope: ScopeProject, Anywhere: true, Path: "mise.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".mise.local.toml", Scope: ScopeProject, Anywhere: true, Path: ".mise.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".config/mise.toml", Scope: ScopeProject, Anywhere: true, Path: ".config/mise.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".config/mise.local.toml", Scope: ScopeProject, Anywhere: true, Path: ".config/mise.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: "mise/config.toml", Scope: ScopeProject, Anywhere: true, Path: "mise/config.toml", Why: "the same, under another of the names mise reads"},
	{Name: "mise/config.local.toml", Scope: ScopeProject, Anywhere: true, Path: "mise/config.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".config/mise", Scope: ScopeProject, Anywhere: true, Path: ".config/mise", Dir: true, Why: "mise reads config.toml, config.local.toml and conf.d/*.toml here"},
	{Name: ".mise", Scope: ScopeProject, Anywhere: true, Path: ".mise", Dir: true, Why: "mise reads config.toml and config.local.toml here"},
	{Name: ".nvmrc", Scope: ScopeProject, Anywhere: true, Path: ".nvmrc", Why: "nvm and auto-switching shells pick the node it names on cd"},
	{Name: ".node-version", Scope: ScopeProject, Anywhere: true, Path: ".node-version", Why: "fnm, nodenv and volta pick the node it names on cd"},
	{Name: ".python-version", Scope: ScopeProject, Anywhere: true, Path: ".python-version", Why: "pyenv runs the interpreter it names on every python call (CVE-2022-35861: a path there ran any binary)"},
	{Name: "rust-toolchain.toml", Scope: ScopeProject, Anywhere: true, Path: "rust-toolchain.toml", Why: "rustup runs the toolchain its path setting names on every cargo and rustc call (a prompt showing the Rust version calls rustc on cd)"},
	{Name: "rust-toolchain", Scope: ScopeProject, Anywhere: true, Path: "rust-toolchain", Why: "the same, under rustup's older name (TOML too)"},
	{Name: ".ruby-version", Scope: ScopeProject, Anywhere: true, Path: ".ruby-version", Why: "rbenv and chruby run the ruby it names (the same path traversal class as pyenv's)"},
	// rbenv's descendants read a version file's first word as a directory under their
	// versions/ and run its bin/: jenv (current), goenv before 2.2.29 and plenv refuse no
	// "../", so "../../proj/evil" ran the tree's evil/bin/java through the host's next java
	// (hostile review, session 19).
	{Name: ".java-version", Scope: ScopeProject, Anywhere: true, Path: ".java-version", Why: "jenv runs the java it names on every java call and exports it as JAVA_HOME (a ../ path there ran any binary)"},
	{Name: ".java-options", Scope: ScopeProject, Anywhere: true, Path: ".java-options", Why: "jenv passes its words to every java it runs (-javaagent: loads code from a jar)"},
	{Name: ".go-version", Scope: ScopeProject, Anywhere: true, Path: ".go-version", Why: "goenv runs the go it names on every go call (before 2.2.29 a ../ path there ran any binary); mise reads it too"},
	{Name: ".perl-version", Scope: ScopeProject, Anywhere: true, Path: ".perl-version", Why: "plenv runs the perl it names on every perl call (a ../ path there runs any binary)"},
	{Name: ".sdkmanrc", Scope: ScopeProject, Anywhere: true, Path: ".sdkmanrc", Why: "SDKMAN!'s sdk env (on cd with sdkman_auto_env) puts candidates/<name>/<version>/bin first in PATH: a ../ version there put the tree's java first"},
	{Name: ".terraform-version", Scope: ScopeProject, Anywhere: true, Path: ".terraform-version", Why: "tfenv runs versions/<it>/terraform on every terraform call (a ../ path there ran any binary)"},
	// More of tfenv's and rbenv's descendants take the version file's content as a
	// directory under their versions/ with no "../" refused: a box run's
	// "../../../../tmp/proj/evil" had the host's next tofu, terragrunt, packer, lua, swift,
	// scala, sbt, crystal and elixir through each manager run the tree's evil/ (hostile
	// review, session 20, each manager's current source run as an unprivileged user).
	{Name: ".opentofu-version", Scope: ScopeProject, Anywhere: true, Path: ".opentofu-version", Why: "tofuenv runs versions/<it>/tofu on every tofu call (a ../ path there ran any binary)"},
	{Name: ".terragrunt-version", Scope: ScopeProject, Anywhere: true, Path: ".terragrunt-version", Why: "tgenv runs versions/<it>/terragrunt on every terragrunt call (a ../ path there ran any binary)"},
	{Name: ".packer-version", Scope: ScopeProject, Anywhere: true, Path: ".packer-version", Why: "pkenv runs versions/<it>/packer on every packer call (a ../ path there ran any binary)"},
	{Name: ".lua-version", Scope: ScopeProject, Anywhere: true, Path: ".lua-version", Why: "luaenv runs the lua it names on every lua call (a ../ path there ran any binary)"},
	{Name: ".luaenv-version", Scope: ScopeProject, Anywhere: true, Path: ".luaenv-version", Why: "the same, under luaenv's other name"},
	{Name: ".swift-version", Scope: ScopeProject, Anywhere: true, Path: ".swift-version", Why: "swiftenv runs the swift it names on every swift call (a ../ path there ran any binary)"},
	{Name: ".scala-version", Scope: ScopeProject, Anywhere: true, Path: ".scala-version", Why: "scalaenv runs the scala it names on every scala call (a ../ path there ran any binary)"},
	{Name: ".sbt-version", Scope: ScopeProject, Anywhere: true, Path: ".sbt-version", Why: "sbtenv runs the sbt it names on every sbt call (a ../ path there ran any binary)"},
	{Name: ".crystal-version", Scope: ScopeProject, Anywhere: true, Path: ".crystal-version", Why: "crenv runs the crystal it names on every crystal call (a ../ path there ran any binary)"},
	{Name: ".crenv-version", Scope: ScopeProject, Anywhere: true, Path: ".crenv-version", Why: "the same, under crenv's other name"},
	{Name: ".exenv-version", Scope: ScopeProject, Anywhere: true, Path: ".exenv-version", Why: "exenv runs the elixir it names on every elixir, mix and iex call (a ../ path there ran any binary)"},
	// direnv's allow covers the .envrc's own content, not what it loads: an allowed
	// .envrc's source_env_if_exists .envrc.local ran the sandbox's .envrc.local, and its
	// dotenv the sandbox's .env (PROMPT_COMMAND, LD_PRELOAD), at the host's next cd
	// without a question (hostile review, session 19). Last: a path a project entry names
	// too (flake.nix under "use flake") keeps that entry's name, the first rule winning.
	// yarnPath names the yarn that runs: the rc read-only, its target writable, was a
	// rewritten .yarn/releases/yarn-4.5.0.cjs run by the host's next yarn --version
	// (hostile review, session 20).
	// pnpm-workspace.yaml's or .npmrc's pnpmfile names what pnpm requires on every command
	// (hostile review, session 21, pnpm 10.34.9's pnpm --version ran it): the same scope.
	{Name: "yarn:path", Scope: ScopeYarnPath,
		Why: "a yarn rc names it (yarnPath, yarn-path, a plugin's path), or pnpm's config (pnpmfile or its global pnpmfile, in pnpm-workspace.yaml or .npmrc; a plugin config dependency's node_modules/.pnpm-config/NAME/pnpmfile.cjs): yarn runs it instead of itself, or loads it, and pnpm requires it, on every command"},
	// mise's trust covers the config's content, not what its [env] loads: a trusted
	// mise.toml's _.source script and _.file dotenv, rewritten by a box run, ran and
	// exported LD_PRELOAD at the host's next prompt under mise activate (hostile review,
	// session 20).
	{Name: "mise:source", Scope: ScopeMiseSource,
		Why: "a mise config's [env] loads it (_.source, _.file): mise sources or exports it on every prompt under mise activate, its trust covering only the config"},
	{Name: "direnv:source", Scope: ScopeEnvrcSource,
		Why: "a project's .envrc loads it (source_env, dotenv, source, use flake, use nix): direnv runs, exports or has Nix evaluate it on cd with no question, its allow covering only the .envrc"},
}

// ProtectEntries returns the protected set's rules, in their order.
func ProtectEntries() []ProtectEntry { return append([]ProtectEntry(nil), protectEntries...) }

// ProtectEntryNamed finds an entry by name.
func ProtectEntryNamed(name string) (ProtectEntry, bool) {
	for _, e := range protectEntries {
		if e.Name == name {
			return e, true
		}
	}
	return ProtectEntry{}, false
}

// ProtectOptionError is a profile's protect_add or protect_drop naming something box refuses.
type ProtectOptionError struct{ Key, Value, Why string }

func (e *ProtectOptionError) Error() string { return fmt.Sprintf("%s %q: %s", e.Key, e.Value, e.Why) }

// CheckProtect validates a profile's protect_add (add) and protect_drop (drop).
func CheckProtect(add, drop []string) error {
	for _, a := range add {
		if a == "" || filepath.IsAbs(a) || filepath.Clean(a) != a || a == "." || a == ".." || strings.HasPrefix(a, "../") || strings.ContainsAny(a, "\x00\n") {
			return &ProtectOptionError{"protect_add", a, "want a clean path relative to the project, inside it"}
		}
	}
	for _, d := range drop {
		if _, ok := ProtectEntryNamed(d); !ok {
			return &ProtectOptionError{"protect_drop", d, "no such entry in the protected set"}
		}
	}
	return nil
}
