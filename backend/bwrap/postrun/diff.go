package postrun

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Finding kinds.
const (
	// FindConfig: a config key that executes, added or changed during the run.
	FindConfig = "config"
	// FindRepo: a repository (.git directory, pointer file or link, or a bare-looking
	// directory) that did not exist before the run.
	FindRepo = "repo"
	// FindPointer: a .git pointer file whose target changed.
	FindPointer = "pointer"
	// FindFile: a protected file (a hook, .envrc, ...) added or changed.
	FindFile = "file"
	// FindUnparsable: a config file git now refuses; every git command there fails, so
	// nothing in it runs. Reported, left in place.
	FindUnparsable = "unparsable"
	// FindGitPointer: a git directory's commondir or gitdir file, added or changed, that
	// makes the host's git read a repository elsewhere or write a .git file outside the
	// sandbox's reach (git worktree repair).
	FindGitPointer = "gitpointer"
	// FindUnread: a path the sandbox could reach that box could not open even after
	// granting itself the modes (not the operator's, a read-only file system): what is
	// inside was not audited. Moved aside whole when box can.
	FindUnread = "unread"
)

// The protected set's git entries (package protect names them so) a profile may drop.
const (
	LooseHooks          = "git:hooks"
	LooseConfig         = "git:config"
	LooseWorktreeConfig = "git:config.worktree"
	LoosePointer        = "git:pointer"
)

// Finding is one thing the sandbox left that the host would execute.
type Finding struct {
	Kind string `json:"kind"`
	// Path is the file, .git entry or protected path concerned; Repo the repository's
	// .git entry (or bare directory).
	Path string `json:"path"`
	Repo string `json:"repo"`
	// Key, Value and Line: the config entry (FindConfig).
	Key   string `json:"key"`
	Value string `json:"value"`
	Line  int    `json:"line"`
	// Change is "added" or "changed".
	Change string `json:"change"`
	// Runs says what would have run it.
	Runs string `json:"runs"`
	// Exec lists a new repository's executing keys (FindRepo).
	Exec []ConfigEntry `json:"exec"`
	// Set by Neutralise: what box did, where the original is kept, how to restore it;
	// Error when it could not.
	Action  string   `json:"action"`
	Kept    []string `json:"kept"`
	Restore string   `json:"restore"`
	Error   string   `json:"error"`
	// Fix is, when Error is set, the one command that lets the next run finish.
	Fix string `json:"fix"`

	entry   Entry
	before  File
	pointer string
}

// Diff compares the snapshots taken before and after a run. It is pure. Only what lies
// in a writable root of after is a finding: nothing else could be the sandbox's doing.
//
// An executing entry is new when its file did not hold it before (compared file by
// file, so a worktree that reads its main repository's config sees nothing new there).
// An entry reached only through a new include is reported under that include, whose
// removal neutralises it without touching the included file.
func Diff(before, after *Snapshot) []Finding {
	var out []Finding
	fresh := newEntries(before, after)
	isNew := func(e ConfigEntry) bool { return fresh[Loc{e.File, e.Start}] }
	// First the repositories that are new (moved whole: nothing in them is a finding of
	// its own) and those an incomplete snapshot could not judge (never touched).
	var newDots, unknown []string
	for _, dot := range sortedKeys(after.Repos) {
		a := after.Repos[dot]
		if _, existed := before.Repos[dot]; existed {
			continue
		}
		switch {
		case before.Incomplete != "" && (a.Born == 0 || a.Born < before.Taken):
			// Past the bound of an incomplete snapshot, and not born during the run:
			// maybe yours (the audit reports itself incomplete).
			unknown = append(unknown, a.Dot, a.Gitdir)
		case after.writable(dot) && a.Kind != RepoGitdir && !insideKnownGitdir(before, a):
			newDots = append(newDots, dot)
			out = append(out, Finding{Kind: FindRepo, Path: dot, Repo: dot, Change: "added", Exec: a.Exec,
				Runs: repoRuns(a)})
		}
	}
	loose := func(name string) bool { return slices.Contains(before.Loosened, name) }
	under := func(p string, roots []string) bool {
		return slices.ContainsFunc(roots, func(d string) bool { return d != "" && within(p, d) })
	}
	seen := map[Loc]bool{}
	for _, dot := range sortedKeys(after.Repos) {
		a := after.Repos[dot]
		b, existed := before.Repos[dot]
		if under(dot, newDots) || under(dot, unknown) {
			continue
		}
		if existed && a.Kind == RepoPointer && (b.Kind != RepoPointer || a.Pointer != b.Pointer) && after.writable(dot) && !loose(LoosePointer) {
			f := Finding{Kind: FindPointer, Path: dot, Repo: dot, Change: "changed",
				Runs: fmt.Sprintf("git in %s uses %s as its repository", filepath.Dir(dot), a.Gitdir)}
			if b.Kind == RepoPointer {
				f.pointer = b.Pointer
			} else {
				f.Change = "added"
			}
			out = append(out, f)
		}
		for _, e := range a.Exec {
			loc := Loc{e.File, e.Start}
			if seen[loc] || !isNew(e) || !after.writable(e.File) || under(e.File, newDots) {
				continue
			}
			if filepath.Base(e.File) == "config.worktree" && loose(LooseWorktreeConfig) || filepath.Base(e.File) != "config.worktree" && loose(LooseConfig) {
				continue // the profile lets the sandbox change git config
			}
			if slices.ContainsFunc(e.Via, func(v Loc) bool { return fresh[v] }) {
				continue // gone with the new include that reaches it
			}
			seen[loc] = true
			k, _ := Executes(e.Entry)
			change := "added"
			if existed && slices.ContainsFunc(b.Exec, func(x ConfigEntry) bool { return x.Name == e.Name }) {
				change = "changed"
			}
			f := Finding{Kind: FindConfig, Path: e.File, Repo: dot, Key: e.Name, Value: e.Value, Line: e.Line,
				Change: change, Runs: k.Runs, entry: e.Entry}
			for _, x := range a.Exec {
				if slices.Contains(x.Via, loc) {
					f.Exec = append(f.Exec, x) // what the include brings in
				}
			}
			out = append(out, f)
		}
		for _, f := range a.Unparsable {
			if (!existed || !slices.Contains(b.Unparsable, f)) && after.writable(f) && !seen[Loc{f, -1}] {
				seen[Loc{f, -1}] = true
				out = append(out, Finding{Kind: FindUnparsable, Path: f, Repo: dot, Change: "changed",
					Runs: "nothing: git refuses the file, so every git command in this repository fails"})
			}
		}
	}
	// Each git directory's pointer files once, however many repositories use it.
	ptrSeen := map[string]bool{}
	for _, dot := range sortedKeys(after.Repos) {
		a := after.Repos[dot]
		if a.Gitdir == "" || ptrSeen[a.Gitdir] {
			continue
		}
		ptrSeen[a.Gitdir] = true
		for _, f := range gitPointers(gitdirIn(before, a.Gitdir), a, after) {
			if !under(f.Path, newDots) && !under(f.Path, unknown) && after.writable(f.Path) {
				out = append(out, f)
			}
		}
	}
	for _, p := range sortedKeys(after.Unread) {
		if under(p, newDots) || under(p, unknown) || !after.writable(p) {
			continue
		}
		// Unread before the run too, and untouched: still a finding. Below it, what the
		// operator can reach by name may have changed without touching it.
		a := after.Unread[p]
		out = append(out, Finding{Kind: FindUnread, Path: p, Change: "added",
			Runs: "unknown: box could not read it (" + a.Why + "), and git, run by you, may go in by name", before: a})
	}
	for _, p := range sortedKeys(after.Files) {
		a := after.Files[p]
		if a.Kind == "" || a.Kind == "dir" || !after.writable(p) || a.Hook && (strings.HasSuffix(p, ".sample") || loose(LooseHooks)) {
			continue
		}
		if under(p, newDots) || under(p, unknown) {
			continue // moved aside with its repository, or not judged
		}
		if a.Todo && !a.TodoExec {
			continue // a rebase with nothing to run: the host's --continue only picks
		}
		if _, had := before.Repos[a.Top]; a.Top != "" && (!had || len(before.TopGuards) == 0) {
			continue // a new repository's work tree (its .git moved), or a snapshot that did not watch it
		}
		b := before.Files[p]
		change := "added"
		if b.Kind != "" {
			same := b.Kind == a.Kind && b.Mode == a.Mode && b.Link == a.Link && b.Size == a.Size
			if same && (b.Ino == a.Ino && b.Ctime == a.Ctime || b.content != nil && a.content != nil && bytes.Equal(b.content, a.content)) {
				continue // untouched, or touched back to the same bytes
			}
			change = "changed"
		}
		out = append(out, Finding{Kind: FindFile, Path: p, Change: change, Runs: a.Runs, before: b})
	}
	return out
}

// gitPointers are a's commondir and gitdir files that the run added or changed and that
// lead the host's git somewhere the sandbox could not write itself: a commondir naming
// another common directory than the one the git directory lies in (or, for a
// repository's own git directory, any change), a linked worktree's gitdir naming a .git
// file outside the writable roots (git worktree repair writes it).
func gitPointers(b, a *Repo, after *Snapshot) []Finding {
	if a == nil || a.Gitdir == "" {
		return nil
	}
	var bc, bg string
	if b != nil {
		bc, bg = b.Commondir, b.GitdirFile
	}
	var out []Finding
	if a.Commondir != bc && a.Commondir != "" {
		// A linked worktree's git directory names its own common directory: what git
		// worktree add writes, nothing new.
		own := filepath.Base(filepath.Dir(a.Gitdir)) == "worktrees" &&
			a.Common == gitRealPath(filepath.Dir(filepath.Dir(a.Gitdir)))
		if !own {
			out = append(out, Finding{Kind: FindGitPointer, Path: filepath.Join(a.Gitdir, "commondir"), Repo: a.Dot,
				Change: change(bc), Runs: "the host's git in this repository reads the config and hooks of " + a.Common, pointer: bc})
		}
	}
	if a.GitdirFile != bg && a.GitdirFile != "" {
		target := strings.TrimRight(a.GitdirFile, "\r\n")
		if !filepath.IsAbs(target) {
			target = filepath.Join(a.Gitdir, target)
		}
		if !after.writable(realDir(filepath.Clean(target))) || strings.HasPrefix(a.GitdirFile, "\x00") {
			out = append(out, Finding{Kind: FindGitPointer, Path: filepath.Join(a.Gitdir, "gitdir"), Repo: a.Dot,
				Change: change(bg), Runs: "the host's git worktree repair writes a .git file at " + target, pointer: bg})
		}
	}
	return out
}

// gitdirIn is a repository of s whose git directory is gd (nil when none).
func gitdirIn(s *Snapshot, gd string) *Repo {
	for _, dot := range sortedKeys(s.Repos) {
		if r := s.Repos[dot]; r.Gitdir == gd {
			return r
		}
	}
	return nil
}

func change(before string) string {
	if before == "" {
		return "added"
	}
	return "changed"
}

// newEntries are the executing entries of after (by file and offset) that their file did
// not hold in before, counted as a multiset per file.
func newEntries(before, after *Snapshot) map[Loc]bool {
	had := map[string]map[string]int{}
	for _, e := range perFile(before) {
		if had[e.File] == nil {
			had[e.File] = map[string]int{}
		}
		had[e.File][entryID(e.Entry)]++
	}
	fresh := map[Loc]bool{}
	for _, e := range perFile(after) {
		if id := entryID(e.Entry); had[e.File][id] > 0 {
			had[e.File][id]--
			continue
		}
		fresh[Loc{e.File, e.Start}] = true
	}
	return fresh
}

// perFile lists every executing entry once per file, however many repositories read it.
func perFile(s *Snapshot) []ConfigEntry {
	var out []ConfigEntry
	seen := map[Loc]bool{}
	for _, dot := range sortedKeys(s.Repos) {
		for _, e := range s.Repos[dot].Exec {
			if l := (Loc{e.File, e.Start}); !seen[l] {
				seen[l] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// insideKnownGitdir: a new pointer naming a git directory inside (or equal to) one that
// existed before is a submodule or worktree made inside (git submodule add, git worktree
// add); its config and hooks are audited key by key instead of moving it.
func insideKnownGitdir(before *Snapshot, r *Repo) bool {
	if r.Kind != RepoPointer || r.Gitdir == "" {
		return false
	}
	for _, b := range before.Repos {
		if (b.Kind == RepoDir || b.Kind == RepoBare) && within(r.Gitdir, b.Common) {
			return true
		}
	}
	return false
}

func entryID(e Entry) string {
	return fmt.Sprintf("%s\x00%t\x00%s", e.Name, e.HasValue, e.Value)
}

func repoRuns(r *Repo) string {
	if len(r.Exec) == 0 {
		return "the host's git would use it as a repository in " + worktreeOf(r)
	}
	var keys []string
	for _, e := range r.Exec {
		keys = append(keys, e.Name)
	}
	return "the host's git would run its " + strings.Join(slices.Compact(keys), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
