// Package protect is the protected set of the bwrap backend: the paths in and around the
// working directory that host tools execute or obey on their own (git hooks and config,
// direnv's .envrc, an editor's tasks, an agent's settings), kept read-only inside the
// sandbox so nothing the sandbox writes runs outside it.
//
// The set is defined once, as data, in Entries. Build (pure) turns the entries and the
// facts Scan found about the tree into the concrete host paths to protect; the bwrap
// argv binds them read-only after the working directory, and the post-run audit reads
// the same list (Set.Paths).
package protect

// Scope says what an entry's path is relative to.
type Scope string

const (
	// GitDir: relative to every git directory found (a repository's .git, each
	// .git/modules/* of a submodule, each .git/worktrees/* of a linked worktree).
	GitDir Scope = "gitdir"
	// Pointer: the .git file of a worktree or submodule (a "gitdir: PATH" line).
	Pointer Scope = "pointer"
	// Nested: the .git directory of a repository nested in the working directory (not
	// a submodule or worktree of its repository): read-only as a whole.
	Nested Scope = "nested"
	// HooksPath: a directory a repository's core.hooksPath names inside the working
	// directory (husky's .husky/_, a project's .githooks).
	HooksPath Scope = "hookspath"
	// Include: a file a repository's config includes, inside the working directory.
	Include Scope = "include"
	// Project: relative to the working directory and to the top of every repository
	// nested in it.
	Project Scope = "project"
	// HomeLink: a file or directory in the working directory that an entry of your home
	// links to (a dotfiles repository: ~/.bashrc -> dotfiles/bashrc).
	HomeLink Scope = "homelink"
	// HookLink: a file in the working directory that a hook links to (a repository's
	// hooks/NAME, or one in its core.hooksPath, is a link to scripts/NAME).
	HookLink Scope = "hooklink"
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

// Entry is one rule of the protected set.
type Entry struct {
	// Name is how the entry is named in profiles (protect_drop) and in --dry-run: the
	// relative path for project entries, "git:PATH" for git directory entries.
	Name  string
	Scope Scope
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
}

// GitDirKind tells a repository's (or submodule's) own git directory from a linked
// worktree's.
type GitDirKind string

const (
	MainGitDir   GitDirKind = "main"
	LinkedGitDir GitDirKind = "linked"
)

// entries is THE protected set. Every entry says what executes or obeys it; docs/bwrap.md
// explains the choices (and what is deliberately not here).
var entries = []Entry{
	// Inside every git directory.
	{Name: "git:hooks", Scope: GitDir, Path: "hooks", Dir: true, Absent: EmptyDir, Only: MainGitDir,
		Why: "git runs hooks/<name> on commit, checkout, merge, rebase, push, am"},
	{Name: "git:config", Scope: GitDir, Path: "config", Absent: EmptyFile, Only: MainGitDir,
		Why: "git obeys it on every command: core.fsmonitor runs on each git status, core.hooksPath, core.pager, core.sshCommand, aliases, filters, diff and merge drivers, credential helpers, include.path"},
	// Absent, it gets a placeholder only where the config enables it (Build): git
	// never reads it otherwise, and the config is protected.
	{Name: "git:config.worktree", Scope: GitDir, Path: "config.worktree", Absent: EmptyFile,
		Why: "git reads it like config when extensions.worktreeConfig is set"},
	{Name: "git:commondir", Scope: GitDir, Path: "commondir", Absent: SelfCommonDir,
		Why: "redirects git to another directory's config and hooks"},
	{Name: "git:gitdir", Scope: GitDir, Path: "gitdir", Only: LinkedGitDir,
		Why: "a linked worktree's back-link: git worktree repair writes a .git file where it points, prune deletes by it"},
	{Name: "git:pointer", Scope: Pointer,
		Why: "a worktree's or submodule's .git file: git takes its config and hooks from the directory it names"},
	{Name: "git:hooksPath", Scope: HooksPath, Dir: true, Absent: EmptyDir,
		Why: "a repository's core.hooksPath (or, without one, your global config's) names it: git runs the hooks in it (an empty directory, invisible to git status, is put where it is missing)"},
	{Name: "git:include", Scope: Include, Absent: EmptyFile,
		Why: "a repository's config includes it (include.path, includeIf): git obeys it like the config (an empty file, which sets nothing, is put where it is missing)"},
	// Whole, not part by part: every bind costs launch time (bwrap's mounts grow
	// superlinearly), and a clone nested in the project (not a submodule) is rarely
	// committed to from the agent's run; commit in it from a box run there.
	// A dotfiles repository: what the home links to is live configuration, run by the
	// next shell, git or editor, whatever its name in the tree.
	{Name: "home:link", Scope: HomeLink,
		Why: "your home links to it (~/.NAME, ~/.config/..., ~/.local/bin/NAME; a dotfiles repository) or your global git config includes it: your shell, git, editor, session or PATH runs it outside the sandbox"},
	{Name: "git:hook-link", Scope: HookLink,
		Why: "a git hook links to it (hooks/pre-commit -> ../../scripts/pre-commit): git runs it on the hook's event"},
	{Name: "git:nested", Scope: Nested, Dir: true,
		Why: "a repository nested in the working directory: git obeys its config and runs its hooks when you work in it (read-only whole inside)"},

	// The project: what host tools execute or obey when the operator opens or enters it.
	{Name: ".envrc", Scope: Project, Path: ".envrc", Why: "direnv runs it on cd (once allowed, or at once under a whitelisted prefix)"},
	{Name: ".vscode", Scope: Project, Path: ".vscode", Dir: true, Why: "VS Code runs tasks with runOn folderOpen and obeys settings naming interpreters, shells and formatters"},
	{Name: ".idea", Scope: Project, Path: ".idea", Dir: true, Why: "JetBrains IDEs run startup tasks, run configurations and external tools defined here"},
	{Name: ".zed", Scope: Project, Path: ".zed", Dir: true, Why: "Zed obeys project settings naming language-server binaries and tasks"},
	{Name: ".devcontainer", Scope: Project, Path: ".devcontainer", Dir: true, Why: "dev containers run initializeCommand on the host, and build what it names"},
	{Name: ".mcp.json", Scope: Project, Path: ".mcp.json", Why: "Claude Code starts the MCP servers it names"},
	{Name: ".claude/settings.json", Scope: Project, Path: ".claude/settings.json", Why: "Claude Code on the host runs its hooks and obeys its permissions"},
	{Name: ".claude/settings.local.json", Scope: Project, Path: ".claude/settings.local.json", Why: "the same, for the local settings"},
	{Name: ".claude/commands", Scope: Project, Path: ".claude/commands", Dir: true, Why: "slash commands the host's Claude Code obeys"},
	{Name: ".claude/agents", Scope: Project, Path: ".claude/agents", Dir: true, Why: "subagent definitions the host's Claude Code obeys"},
	{Name: ".claude/hooks", Scope: Project, Path: ".claude/hooks", Dir: true, Why: "scripts the settings' hooks commonly run"},
	{Name: ".claude/skills", Scope: Project, Path: ".claude/skills", Dir: true, Why: "skills (instructions and scripts) the host's Claude Code loads"},
	{Name: ".cursor", Scope: Project, Path: ".cursor", Dir: true, Why: "Cursor starts the MCP servers in .cursor/mcp.json and obeys its rules"},
	{Name: ".gemini", Scope: Project, Path: ".gemini", Dir: true, Why: "Gemini CLI obeys settings.json (MCP servers, tools)"},
	{Name: ".codex", Scope: Project, Path: ".codex", Dir: true, Why: "Codex obeys a project's config.toml (MCP servers, sandbox settings)"},
	{Name: ".qwen", Scope: Project, Path: ".qwen", Dir: true, Why: "Qwen Code obeys settings.json (MCP servers, tools), as Gemini CLI does"},
	{Name: ".windsurf", Scope: Project, Path: ".windsurf", Dir: true, Why: "Windsurf obeys its rules and workflows, which can tell it to run commands"},
	{Name: "opencode.json", Scope: Project, Path: "opencode.json", Why: "opencode starts the local MCP servers (commands) it names when it opens the project"},
	{Name: "opencode.jsonc", Scope: Project, Path: "opencode.jsonc", Why: "the same, under opencode's other name"},
	{Name: ".opencode", Scope: Project, Path: ".opencode", Dir: true, Why: "opencode loads and runs the JavaScript plugins in .opencode/plugin at start, and obeys its agents and commands"},
	{Name: "crush.json", Scope: Project, Path: "crush.json", Why: "Crush starts the MCP servers and language servers (commands) it names"},
	{Name: ".crush.json", Scope: Project, Path: ".crush.json", Why: "the same, under Crush's other name"},
	{Name: ".kiro", Scope: Project, Path: ".kiro", Dir: true, Why: "Kiro runs the shell commands of its agent hooks (.kiro/hooks) on file events and starts .kiro/settings/mcp.json's servers"},
	{Name: ".amazonq", Scope: Project, Path: ".amazonq", Dir: true, Why: "Amazon Q Developer starts the MCP servers in .amazonq/mcp.json"},
	{Name: ".roo", Scope: Project, Path: ".roo", Dir: true, Why: "Roo Code starts the MCP servers in .roo/mcp.json"},
	{Name: ".continue", Scope: Project, Path: ".continue", Dir: true, Why: "Continue starts the MCP servers its project config names"},
	{Name: ".aider.conf.yml", Scope: Project, Path: ".aider.conf.yml", Why: "aider runs its lint-cmd after every edit (auto-lint is on by default) and its test-cmd"},
	{Name: ".devcontainer.json", Scope: Project, Path: ".devcontainer.json", Why: "dev containers read it like .devcontainer/devcontainer.json: initializeCommand runs on the host"},
	{Name: ".husky", Scope: Project, Path: ".husky", Dir: true, Why: "husky points core.hooksPath here: git runs these hooks"},
	{Name: ".pre-commit-config.yaml", Scope: Project, Path: ".pre-commit-config.yaml", Why: "an installed pre-commit hook runs the hooks it names"},
	{Name: "lefthook.yml", Scope: Project, Path: "lefthook.yml", Why: "an installed lefthook hook runs the commands it names"},
	{Name: ".lefthook.yml", Scope: Project, Path: ".lefthook.yml", Why: "the same, under lefthook's other name"},
	{Name: "lefthook.yaml", Scope: Project, Path: "lefthook.yaml", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook.toml", Scope: Project, Path: "lefthook.toml", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook.json", Scope: Project, Path: "lefthook.json", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook.jsonc", Scope: Project, Path: "lefthook.jsonc", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.yaml", Scope: Project, Path: ".lefthook.yaml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.toml", Scope: Project, Path: ".lefthook.toml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.json", Scope: Project, Path: ".lefthook.json", Why: "the same, under another of the names lefthook reads"},
	{Name: ".lefthook.jsonc", Scope: Project, Path: ".lefthook.jsonc", Why: "the same, under another of the names lefthook reads"},
	{Name: "lefthook-local.yml", Scope: Project, Path: "lefthook-local.yml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.yaml", Scope: Project, Path: "lefthook-local.yaml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.toml", Scope: Project, Path: "lefthook-local.toml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.json", Scope: Project, Path: "lefthook-local.json", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: "lefthook-local.jsonc", Scope: Project, Path: "lefthook-local.jsonc", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.yml", Scope: Project, Path: ".lefthook-local.yml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.yaml", Scope: Project, Path: ".lefthook-local.yaml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.toml", Scope: Project, Path: ".lefthook-local.toml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.json", Scope: Project, Path: ".lefthook-local.json", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".lefthook-local.jsonc", Scope: Project, Path: ".lefthook-local.jsonc", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook.yml", Scope: Project, Path: ".config/lefthook.yml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.yaml", Scope: Project, Path: ".config/lefthook.yaml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.toml", Scope: Project, Path: ".config/lefthook.toml", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.json", Scope: Project, Path: ".config/lefthook.json", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook.jsonc", Scope: Project, Path: ".config/lefthook.jsonc", Why: "the same, under another of the names lefthook reads"},
	{Name: ".config/lefthook-local.yml", Scope: Project, Path: ".config/lefthook-local.yml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.yaml", Scope: Project, Path: ".config/lefthook-local.yaml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.toml", Scope: Project, Path: ".config/lefthook-local.toml", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.json", Scope: Project, Path: ".config/lefthook-local.json", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".config/lefthook-local.jsonc", Scope: Project, Path: ".config/lefthook-local.jsonc", Why: "lefthook's hook merges its -local config over the main one and runs its commands"},
	{Name: ".gitmodules", Scope: Project, Path: ".gitmodules", Why: "git submodule clones the URLs and writes the paths it names"},
	{Name: ".npmrc", Scope: Project, Path: ".npmrc", Why: "npm obeys it on every command (script-shell, node-options=--require, registry)"},
	{Name: ".yarnrc.yml", Scope: Project, Path: ".yarnrc.yml", Why: "yarn runs the file yarnPath names instead of itself"},
	{Name: ".yarnrc", Scope: Project, Path: ".yarnrc", Why: "yarn classic runs yarn-path instead of itself"},
	{Name: ".tool-versions", Scope: Project, Path: ".tool-versions", Why: "asdf and mise pick (and may install) the tools it names on cd"},
	{Name: "mise.toml", Scope: Project, Path: "mise.toml", Why: "mise runs its enter hooks and env scripts on cd (once trusted)"},
	{Name: ".mise.toml", Scope: Project, Path: ".mise.toml", Why: "the same, under mise's other name"},
	{Name: "mise.local.toml", Scope: Project, Path: "mise.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".mise.local.toml", Scope: Project, Path: ".mise.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".config/mise.toml", Scope: Project, Path: ".config/mise.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".config/mise.local.toml", Scope: Project, Path: ".config/mise.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: "mise/config.toml", Scope: Project, Path: "mise/config.toml", Why: "the same, under another of the names mise reads"},
	{Name: "mise/config.local.toml", Scope: Project, Path: "mise/config.local.toml", Why: "the same, under another of the names mise reads"},
	{Name: ".config/mise", Scope: Project, Path: ".config/mise", Dir: true, Why: "mise reads config.toml, config.local.toml and conf.d/*.toml here"},
	{Name: ".mise", Scope: Project, Path: ".mise", Dir: true, Why: "mise reads config.toml and config.local.toml here"},
	{Name: ".nvmrc", Scope: Project, Path: ".nvmrc", Why: "nvm and auto-switching shells pick the node it names on cd"},
	{Name: ".node-version", Scope: Project, Path: ".node-version", Why: "fnm, nodenv and volta pick the node it names on cd"},
	{Name: ".python-version", Scope: Project, Path: ".python-version", Why: "pyenv runs the interpreter it names on every python call (CVE-2022-35861: a path there ran any binary)"},
	{Name: "rust-toolchain.toml", Scope: Project, Path: "rust-toolchain.toml", Why: "rustup runs the toolchain its path setting names on every cargo and rustc call (a prompt showing the Rust version calls rustc on cd)"},
	{Name: "rust-toolchain", Scope: Project, Path: "rust-toolchain", Why: "the same, under rustup's older name (TOML too)"},
	{Name: ".ruby-version", Scope: Project, Path: ".ruby-version", Why: "rbenv and chruby run the ruby it names (the same path traversal class as pyenv's)"},
}

// Entries returns the protected set's rules, in their order.
func Entries() []Entry { return append([]Entry(nil), entries...) }

// Lookup finds an entry by name.
func Lookup(name string) (Entry, bool) {
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}
