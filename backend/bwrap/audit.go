package bwrap

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"github.com/heavy-duty/box/backend/bwrap/postrun"
	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/internal/phase"
	"github.com/heavy-duty/box/policy"
)

// Audit is the post-run audit of one launch (package postrun): BeginAudit records what
// can make the host execute code before the sandbox starts, End compares after the
// command ended, moves aside what the sandbox added and reports it.
//
// The snapshot is also kept on disk, locked, while the sandbox runs: when box itself is
// killed (SIGKILL, a crash, a power cut), RecoverAudits in the next run in the same
// directory finds the unlocked snapshot and audits against it first, so a planted key
// never becomes part of the next run's "before".
//
// Runs on one tree at once (docs/bwrap.md, "Concurrent runs on one tree"): the run that
// finds the tree quiet keeps its snapshot as the tree's baseline, and a run that starts
// while others hold the tree takes that baseline as its "before", so what a sandbox
// still running wrote is judged, never taken for the tree's state.
type Audit struct {
	in         postrun.Input
	before     *postrun.Snapshot
	quarantine string
	pending    *os.File
	tree       *protect.Hold
	// listings are the before-walk's directory listings: the after-walk lists again
	// only the directories changed since (package dirlist).
	listings *dirlist.Cache
	// keep is where the after-walk's listings are kept for the next run's scan
	// (ListingsPath).
	keep string
}

// BaselineError: other box runs hold the working directory, and their baseline (the
// tree's snapshot from before any of them started) is missing or unreadable; without it
// this run's audit would take what their sandboxes wrote for the tree's own state.
type BaselineError struct {
	Workdir string
	Err     error
}

func (e *BaselineError) Error() string {
	return fmt.Sprintf("post-run audit: other box runs hold %s and their baseline is unreadable (%v): not launched, since this run's audit could not tell what their sandboxes wrote", e.Workdir, e.Err)
}
func (e *BaselineError) Unwrap() error { return e.Err }

// Hint says what to do.
func (e *BaselineError) Hint() string {
	return "wait for the other box runs in this directory to end (an older box version keeps no baseline), then launch again"
}

// AuditDirs are where the audit keeps its state under box's data directory: the pending
// snapshots and the quarantine.
func AuditDirs(dataHome string) (pending, quarantine string) {
	return filepath.Join(dataHome, "box", "audit"), filepath.Join(dataHome, "box", "quarantine")
}

// ListingsPath is where the directory listings of the last run's walk after its sandbox
// ended are kept for the next run in workdir (dirlist.Save; "" for none), in box's data
// directory, outside every sandbox: the next run's scan and snapshot list again only
// the directories changed since.
func ListingsPath(dataHome, workdir string) string {
	if !filepath.IsAbs(dataHome) {
		return "" // nowhere: never a path relative to the working directory
	}
	sum := sha256.Sum256([]byte(workdir))
	return filepath.Join(dataHome, "box", "audit", "listings", hex.EncodeToString(sum[:16]))
}

// AuditInput is what the audit of p's sandbox reads: its working directory, every path
// it can write, and the protected paths.
func (p *Plan) AuditInput() postrun.Input {
	in := postrun.Input{Workdir: p.Spec.Workdir, Home: p.Spec.Home, Writable: []string{p.Spec.Workdir}, Listings: p.listings}
	for _, m := range p.Spec.Mounts {
		if m.RW {
			// Written as the working directory is, so walked as it is.
			in.Writable, in.Trees = append(in.Writable, m.Src), append(in.Trees, m.Src)
		}
	}
	// Git directories outside the working directory bound read-write so commits work.
	in.Writable = append(in.Writable, p.Protect.Binds...)
	// The protected set's project files (.envrc, .vscode/, ...). Its git entries (hooks,
	// config, commondir, pointers) the audit reads itself, by meaning, from every
	// repository it finds, including those past the scan's bound.
	n := 0
	for _, pp := range p.Protect.Protected {
		if !strings.HasPrefix(pp.Entry, "git:") {
			n++
		}
	}
	if n > 0 { // sized once: thousands in a tree of many repositories
		in.Protected = make([]postrun.Guard, 0, n)
	}
	for _, pp := range p.Protect.Protected {
		if !strings.HasPrefix(pp.Entry, "git:") {
			in.Protected = append(in.Protected, postrun.Guard{Path: pp.Path, Runs: pp.Why})
		}
	}
	// What the profile dropped (protect_drop) the audit honours.
	in.Loosened = p.Protect.Dropped
	for _, e := range policy.ProtectEntries() {
		if e.AuditAsFile && !slices.Contains(p.Protect.Dropped, e.Name) {
			in.GitdirGuards = append(in.GitdirGuards, postrun.Guard{Path: e.Path, Runs: e.Why})
		}
		// At the top of every work tree the audit finds, also those the scan did not
		// reach (past its bound, in node_modules).
		if e.Scope == policy.ScopeProject && !slices.Contains(p.Protect.Dropped, e.Name) {
			in.TopGuards = append(in.TopGuards, postrun.Guard{Path: e.Path, Runs: e.Why})
			// And in every directory, where a tool started there obeys it.
			if e.Anywhere {
				in.AnyGuards = append(in.AnyGuards, postrun.Guard{Path: e.Path, Runs: e.Why + " (started in this directory)"})
			}
		}
	}
	return in
}

// DataDirError: box cannot make its state directory under Dir ($XDG_DATA_HOME, else
// ~/.local/share): a HOME that is / or not the user's own, as in a container or CI job.
// Nothing has run.
type DataDirError struct {
	Dir string
	Err error
}

func (e *DataDirError) Error() string {
	return fmt.Sprintf("box keeps its state (instance directories, the post-run audit's snapshots) under %s/box and cannot create it: %v", e.Dir, e.Err)
}

func (e *DataDirError) Unwrap() error { return e.Err }

// pendingPrefix names the pending snapshots of one working directory (by its hash).
func pendingPrefix(workdir string) string {
	sum := sha256.Sum256([]byte(workdir))
	return hex.EncodeToString(sum[:8]) + "."
}

// RecoverAudits completes the audits earlier runs in workdir left unfinished (box was
// killed, or a finding could not be neutralised), against their own snapshots. Call it
// before anything reads the tree for a new run. A snapshot still locked belongs to a run
// in progress and is left alone.
func RecoverAudits(workdir, dataHome string) ([]*postrun.Report, error) {
	pdir, qdir := AuditDirs(dataHome)
	auditSwitches()
	ents, err := os.ReadDir(pdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("post-run audit: %w", err)
	}
	// box's own placeholders (a killed run leaves them; the next run's hold removes
	// them) are known, as at a run's end: by path and content. Field review, session
	// 18: the placeholder commondir was moved aside as "git pointer file added".
	lock := LegacyInstanceDir(dataHome, workdir) + ".lock"
	placed := protect.Placed(lock)
	known := func(f postrun.Finding) bool {
		return !protectionOff(ProtAuditConcurrent) && protect.IsPlaceholder(f.Path, placed)
	}
	var out []*postrun.Report
	prefix := pendingPrefix(workdir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), ".json") {
			if r := recoverPending(filepath.Join(pdir, e.Name()), workdir, qdir, known); r != nil {
				out = append(out, r)
			}
		}
	}
	if len(placed) > 0 {
		// And removed before this run reads the tree, unless a run going holds it.
		if h, err := protect.Enter(lock); err == nil {
			_ = h.Entered()
			h.Leave(nil)
		}
	}
	return out, nil
}

func recoverPending(path, workdir, qdir string, known func(postrun.Finding) bool) *postrun.Report {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil // a run in progress
	}
	var before postrun.Snapshot
	if err := json.NewDecoder(f).Decode(&before); err != nil || before.Workdir != workdir {
		// Written but never completed (the run died while writing it): nothing to
		// compare with; the next snapshot is all there is.
		os.Remove(path)
		return nil
	}
	r := postrun.AuditKnown(&before, postrun.Take(before.Input()), qdir, time.Now(), known)
	if !r.Failed() {
		os.Remove(path)
	}
	return r
}

// BeginAudit takes the snapshot of a run about to start in in.Workdir and keeps it,
// locked, under dataHome ($XDG_DATA_HOME) until End. lock is the tree's lock
// (Plan.ProtectLock; "" for none): the run holds the tree from here to End, and joins it
// only with the reach of the runs holding it (trust_tree.go).
func BeginAudit(in postrun.Input, dataHome, lock string, reach Reach) (a *Audit, err error) {
	pdir, qdir := AuditDirs(dataHome)
	a = &Audit{in: in, quarantine: qdir, keep: ListingsPath(dataHome, in.Workdir)}
	auditSwitches()
	if err := os.MkdirAll(pdir, 0o700); err != nil {
		return nil, &DataDirError{Dir: dataHome, Err: err}
	}
	if lock != "" {
		if a.tree, err = protect.Enter(lock); err != nil {
			return nil, fmt.Errorf("post-run audit: %w", err)
		}
		tree := a.tree // a is nil when an error returns
		defer func() {
			if err != nil {
				tree.Leave(nil)
			}
		}()
	}
	phase.Mark("audit:lock")
	a.before = postrun.Take(in)
	a.listings = a.before.Listings()
	phase.Mark("audit:take")
	var b []byte // a.before as JSON, marshalled once
	switch {
	case a.tree == nil || protectionOff(ProtAuditConcurrent):
	case a.tree.Alone():
		if b, err = a.before.JSON(); err != nil {
			return nil, err
		}
		if err := postrun.WriteBaselineJSON(a.tree.Baseline(), b); err != nil {
			return nil, fmt.Errorf("post-run audit: %w", err)
		}
	default:
		base, err := postrun.ReadBaseline(a.tree.Baseline(), in.Workdir)
		if err != nil {
			return nil, &BaselineError{Workdir: in.Workdir, Err: err}
		}
		a.before = postrun.Joined(base, a.before)
	}
	phase.Mark("audit:baseline")
	if a.tree != nil {
		if err := settleTreeReach(a.tree, lock, in.Workdir, reach); err != nil { // trust_tree.go
			return nil, err
		}
		if err := a.tree.Entered(); err != nil {
			return nil, fmt.Errorf("post-run audit: %w", err)
		}
	}
	if b == nil {
		if b, err = a.before.JSON(); err != nil {
			return nil, err
		}
	}
	id := make([]byte, 6)
	rand.Read(id)
	f, err := os.OpenFile(filepath.Join(pdir, pendingPrefix(in.Workdir)+hex.EncodeToString(id)+".json"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("post-run audit: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("post-run audit: locking %s: %w", f.Name(), err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("post-run audit: %w", err)
	}
	a.pending = f
	return a, nil
}

// ProtAudit names the post-run audit among the protections a test build can switch off
// (BOX_UNSAFE_OFF=audit, see kernel.go), so the drill can be shown to catch its absence.
const ProtAudit = "audit"

// ProtAuditModes names the audit's granting of the modes it needs to read and move what
// the sandbox chmodded (postrun.DisableModeRepair), so the drill's unreadable-repository
// row can be shown to catch its absence.
const ProtAuditModes = "audit-modes"

// ProtAuditLinks names the audit's guarding of the links a protected path is reached
// through (postrun.DisableLinkGuards), so the drill's link-out row can be shown to catch
// its absence.
const ProtAuditLinks = "audit-links"

// ProtAuditCommon names the audit's listing of a linked worktree's common git directory
// (postrun.DisableCommonScan), so the drill's worktree-gitdir row can be shown to catch
// its absence.
const ProtAuditCommon = "audit-common"

// ProtAuditWorktreeLinks names the audit's watching of links in a git directory's
// worktrees/ (postrun.DisableWorktreeLinks), so the drill's worktree-link row can be
// shown to catch its absence.
const ProtAuditWorktreeLinks = "audit-worktree-links"

// ProtAuditTops names the audit's watching of the project files at the top of every
// work tree it finds (postrun.DisableTopGuards), so the drill's nested-project-file row
// can be shown to catch its absence.
const ProtAuditTops = "audit-tops"

// ProtAuditWorktreeHooks names the audit's watching of a relative core.hooksPath in the
// work tree core.worktree names (postrun.DisableWorktreeHooks), so the drill's
// worktree-hooks row can be shown to catch its absence.
const ProtAuditWorktreeHooks = "audit-worktree-hooks"

// ProtAuditMounts names the audit's walk of the profile's read-write mounts
// (postrun.DisableMountTrees), so the drill's rw-mount row can be shown to catch its
// absence.
const ProtAuditMounts = "audit-mounts"

// ProtAuditConfigHooks names the audit's keys for git 2.54's configured hooks
// (hook.*; postrun.DisableConfigHooks), so the drill's config-hook row can be shown to
// catch their absence.
const ProtAuditConfigHooks = "audit-config-hooks"

// ProtAuditTooLong names the audit's taking a path it cannot ask about (longer than
// PATH_MAX) for a finding (postrun.DisableTooLong), so a test can show the silence
// without it.
const ProtAuditTooLong = "audit-too-long"

// ProtAuditWatched names the audit's carrying of the work trees' top guards from the
// snapshot before into the one after (postrun.DisableWatched), so the drill's
// degit-envrc row can be shown to catch its absence.
const ProtAuditWatched = "audit-watched"

// auditSwitches sets the audit's test-build switches (all off in a release build).
func auditSwitches() {
	postrun.DisableModeRepair = protectionOff(ProtAuditModes)
	postrun.DisableLinkGuards = protectionOff(ProtAuditLinks)
	postrun.DisableCommonScan = protectionOff(ProtAuditCommon)
	postrun.DisableWorktreeLinks = protectionOff(ProtAuditWorktreeLinks)
	postrun.DisableTopGuards = protectionOff(ProtAuditTops)
	postrun.DisableWorktreeHooks = protectionOff(ProtAuditWorktreeHooks)
	postrun.DisableWatched = protectionOff(ProtAuditWatched)
	postrun.DisableMountTrees = protectionOff(ProtAuditMounts)
	postrun.DisableConfigHooks = protectionOff(ProtAuditConfigHooks)
	postrun.DisableTooLong = protectionOff(ProtAuditTooLong)
	postrun.DisableKeptDefuse = protectionOff(ProtAuditKept)
	postrun.DisableAnyGuards = protectionOff(ProtAuditAnywhere)
	dirlist.DisableStamps = protectionOff(ProtListingStamps)
}

// ProtListingStamps names the check that a directory's kept listing (this run's earlier
// walk's, or the last run's) is reused only while the directory is unchanged since
// (dirlist.DisableStamps; switched off only in a test build, to show the drill's
// protect:stale-listing row catch its absence).
const ProtListingStamps = "listing-stamps"

// ProtHomeDotDirs and ProtHomeMissing name the protected set's look into the home's
// dot-directories (~/.ssh/config linking into the tree) and its watch of a dotfile link's
// target in a directory not made yet (switched off only in a test build, to show the
// drill's protect:home-dotdir-link and protect:home-missing-link rows catch their absence).
const (
	ProtHomeDotDirs = "home-dotdirs"
	ProtHomeMissing = "home-missing"
)

// ProtAuditAnywhere names the audit's watch, in every directory of the tree, of the
// project files a tool started there obeys (postrun.DisableAnyGuards; switched off only
// in a test build, to show the drill's protect:subdir-agent-settings row catch its
// absence).
const ProtAuditAnywhere = "audit-anywhere"

// ProtAuditKept names the renaming of HEAD in a git directory the audit keeps in the
// quarantine, so that git takes the copy for no repository (switched off only in a
// test build, to show the drill's protect:kept-repo row catch its absence).
const ProtAuditKept = "audit-kept"

// ProtAuditConcurrent names the audit's use of the tree's baseline by runs that start
// while others run (switched off only in a test build, to show the breach).
const ProtAuditConcurrent = "audit-concurrent"

// End takes the snapshot after the run, neutralises every finding and returns the
// report (print it with Report.Print; Report.Err says whether the audit failed).
func (a *Audit) End() *postrun.Report {
	// The snapshot stays for the next run only when something could not be
	// neutralised: an incomplete walk would only be incomplete again.
	if protectionOff(ProtAudit) {
		os.Remove(a.pending.Name())
		a.pending.Close()
		if a.tree != nil {
			a.tree.Leave(nil)
		}
		return &postrun.Report{Version: 1, Workdir: a.in.Workdir}
	}
	var r *postrun.Report
	audit := func(placed map[string]bool) {
		// box's own placeholders, placed for runs still going, are known: by path (the
		// registry) and content, never by name.
		known := func(f postrun.Finding) bool {
			return !protectionOff(ProtAuditConcurrent) && protect.IsPlaceholder(f.Path, placed)
		}
		in := a.before.Watched(a.in)
		in.Listings = a.listings
		after := postrun.Take(in)
		r = postrun.AuditKnown(a.before, after, a.quarantine, time.Now(), known)
		// Each listing kept was read whole (dirlist.Put); a failure to keep them costs
		// the next run its listings, nothing else.
		after.Listings().Save(a.keep)
	}
	if a.tree != nil {
		// Under the tree's gate: the last run out removes the placeholders first.
		a.tree.Leave(audit)
	} else {
		audit(nil)
	}
	if !r.Failed() {
		os.Remove(a.pending.Name())
	}
	a.pending.Close()
	return r
}

// AuditError is a post-run audit that could not neutralise everything or could not read
// the whole tree: the host may run what the sandbox left. box exits ExitAudit on it.
type AuditError struct {
	Err      error
	Code     int // the command's own exit code
	Manifest string
}

// ExitAudit is box run's exit code when the post-run audit failed (docs/bwrap.md).
const ExitAudit = 125

func (e *AuditError) Error() string {
	return fmt.Sprintf("%v (the command exited %d)", e.Err, e.Code)
}
func (e *AuditError) Unwrap() error { return e.Err }

// Finish prints the report and turns a failed audit into an *AuditError (nil when the
// audit held).
func Finish(w io.Writer, r *postrun.Report, code int) error {
	r.Print(w)
	if err := r.Err(); err != nil {
		ae := &AuditError{Err: err, Code: code}
		if r.Quarantine != "" {
			ae.Manifest = filepath.Join(r.Quarantine, "manifest.json")
		}
		return ae
	}
	return nil
}

// IsAuditError reports whether err is a failed post-run audit.
func IsAuditError(err error) bool {
	var ae *AuditError
	return errors.As(err, &ae)
}
