package postrun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// The sandbox runs as the operator's uid, so whatever it made is the operator's too, and
// a mode it set (chmod 111, 000, 555) can hide a repository from a walk or make a move
// fail, while git, run later by the same user, goes in by name. The audit therefore
// never takes a refused open for an answer: on a path the sandbox could write, it adds
// the permission bits it needs (access.grant), does its work, and puts the modes back
// (access.restore) on what it left in place. What it cannot open even so is itself a
// finding (FindUnread).

// DisableModeRepair switches off the granting of modes and the unread findings: what
// the audit cannot open, it skips, as box did before (a test build's drill shows what an
// unreadable directory hides then). Never set in box itself.
var DisableModeRepair bool

// DisableLinkGuards switches off the guarding of the links a protected path is reached
// through (guardLinks): the audit judges only where the link leads, as box did before (a
// test build's drill shows the link to the agent's state reaching the host then). Never
// set in box itself.
var DisableLinkGuards bool

// DisableCommonScan switches off the listing of a common git directory's worktrees/ and
// modules/ when it is not the repository's own git directory (a linked worktree's), so
// the drill's worktree-gitdir row can be shown to catch its absence. Only a test build
// sets it.
var DisableCommonScan bool

// DisableWorktreeLinks switches off the watching of links in a git directory's
// worktrees/ (the audit takes only the directories there, as box did before), so the
// drill's worktree-link row can be shown to catch its absence. Only a test build sets it.
var DisableWorktreeLinks bool

// DisableTopGuards switches off the watching of the project files at the top of every
// work tree the audit finds (only those the protected set names are watched, as box did
// before), so the drill's nested-project-file row can be shown to catch its absence.
// Only a test build sets it.
var DisableTopGuards bool

// DisableAnyGuards switches off the watching of the project files a tool started in any
// directory obeys (Input.AnyGuards) outside the tops, so the drill's subdir-agent-settings
// row can be shown to catch its absence. Only a test build sets it.
var DisableAnyGuards bool

// DisableWorktreeHooks switches off the watching of a relative core.hooksPath in the
// work tree core.worktree names (only the .git entry's directory is watched, as box did
// before), so the drill's worktree-hooks row can be shown to catch its absence. Only a
// test build sets it.
var DisableWorktreeHooks bool

// DisableMountTrees switches off the walk of the profile's read-write mounts outside
// the working directory (Input.Trees: only the working directory is walked, as box did
// before), so the drill's rw-mount row can be shown to catch its absence. Only a test
// build sets it.
var DisableMountTrees bool

// DisableTooLong takes an access(2) that fails for any reason as "nobody enters" (a
// path longer than PATH_MAX is skipped in silence, as box did before), so a test can
// show the silence without it. Only a test build sets it.
var DisableTooLong bool

// DisableWatched switches off the audit's carrying of the top guards of the snapshot
// before into the snapshot after (Snapshot.Watched: a work tree's .envrc stays watched
// when the run removed its .git), so the drill's degit-envrc row can be shown to catch
// its absence. Only a test build sets it.
var DisableWatched bool

// access is the modes the audit changed, to put back.
type access struct {
	saved []savedMode
}

type savedMode struct {
	path string
	mode fs.FileMode
}

// grant adds the permission bits want (0o500 to list a directory, 0o300 to change its
// entries, 0o400 to read a file) to p when it lacks them; a link (at p or on its way)
// is left alone, never followed (pin.go). It fails when p cannot be changed (not the
// operator's, a read-only file system), with the reason.
func (a *access) grant(p string, want fs.FileMode) error {
	if DisableModeRepair {
		return unix.EACCES
	}
	var changed bool
	before, link, err := chmodNoFollow(p, func(m fs.FileMode) (fs.FileMode, bool) {
		if m.Perm()&want == want {
			return 0, false
		}
		changed = true
		return m.Perm() | want | m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), true
	})
	if err != nil || link || !changed {
		return err
	}
	if !slices.ContainsFunc(a.saved, func(s savedMode) bool { return s.path == p }) {
		a.saved = append(a.saved, savedMode{p, before})
	}
	return nil
}

// reach grants search permission on every directory from root (included) down to p's
// parent, so p itself can be stat'ed and opened by name.
func (a *access) reach(root, p string) {
	var chain []string
	for d := filepath.Dir(p); within(d, root); d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	for _, d := range slices.Backward(chain) {
		if unix.Access(d, unix.X_OK) != nil {
			a.grant(d, 0o100)
		}
	}
}

// restore puts back every mode it changed on what is still there, deepest first.
func (a *access) restore() {
	for _, s := range slices.Backward(a.saved) {
		// Gone or a link now: moved aside (its copy in the quarantine keeps the granted
		// bits), or swapped by a sandbox still running: never followed.
		chmodNoFollow(s.path, func(fs.FileMode) (fs.FileMode, bool) {
			return s.mode.Perm() | s.mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), true
		})
	}
	a.saved = nil
}

// forget drops the saved modes under p (moved aside: the user reads it where it is kept).
func (a *access) forget(p string) {
	a.saved = slices.DeleteFunc(a.saved, func(s savedMode) bool { return within(s.path, p) })
}

// openTree grants the owner's rwx on every directory and r on every file under p (p
// included), so it can be copied and removed whole. It returns the first path it could
// not open.
func (a *access) openTree(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil
	case !fi.IsDir():
		if fi.Mode().IsRegular() {
			return a.grant(p, 0o600)
		}
		return nil
	}
	if err := a.grant(p, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, a.openTree(filepath.Join(p, e.Name())))
	}
	return errors.Join(errs...)
}

func denied(err error) bool {
	return errors.Is(err, fs.ErrPermission)
}

// DisableKeptDefuse switches off the renaming of HEAD in a git directory the audit kept
// (defuse: the kept copy stays a live git directory, as before), so the drill's
// quarantine row can be shown to catch its absence. Only a test build sets it.
var DisableKeptDefuse bool
