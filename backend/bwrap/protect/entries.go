// Package protect is the protected set of the bwrap backend: the paths in and around the
// working directory that host tools execute or obey on their own (git hooks and config,
// direnv's .envrc, an editor's tasks, an agent's settings), kept read-only inside the
// sandbox so nothing the sandbox writes runs outside it.
//
// The set is defined once, as data, in policy (policy.ProtectEntries). Build (pure)
// turns the entries and the facts Scan found about the tree into the concrete host paths
// to protect; the bwrap argv binds them read-only after the working directory, and the
// post-run audit reads the same list (Set.Paths).
package protect

import "github.com/heavy-duty/box/policy"

// The protected set's entries are policy's; these names keep the scanner's and the
// builder's code short.
type (
	Scope       = policy.ProtectScope
	Placeholder = policy.Placeholder
	Entry       = policy.ProtectEntry
	GitDirKind  = policy.GitDirKind
	OptionError = policy.ProtectOptionError
)

const (
	GitDir    = policy.ScopeGitDir
	Pointer   = policy.ScopePointer
	Nested    = policy.ScopeNested
	HooksPath = policy.ScopeHooksPath
	Include   = policy.ScopeInclude
	EnvrcSrc  = policy.ScopeEnvrcSource
	YarnSrc   = policy.ScopeYarnPath
	MiseSrc   = policy.ScopeMiseSource
	Project   = policy.ScopeProject
	HomeLink  = policy.ScopeHomeLink
	HookLink  = policy.ScopeHookLink

	NoPlaceholder = policy.NoPlaceholder
	EmptyDir      = policy.EmptyDir
	EmptyFile     = policy.EmptyFile
	SelfCommonDir = policy.SelfCommonDir

	MainGitDir   = policy.MainGitDir
	LinkedGitDir = policy.LinkedGitDir
)

// Entries returns the protected set's rules, in their order.
func Entries() []Entry { return policy.ProtectEntries() }

// Lookup finds an entry by name.
func Lookup(name string) (Entry, bool) { return policy.ProtectEntryNamed(name) }
