package postrun

import (
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
)

// Finding is one thing the sandbox left that the host would execute.
type Finding struct {
	Kind string `json:"kind"`
	// Path is the file, .git entry or protected path concerned; Repo the repository's
	// .git entry (or bare directory).
	Path string `json:"path"`
	Repo string `json:"repo,omitempty"`
	// Key, Value and Line: the config entry (FindConfig).
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	Line  int    `json:"line,omitempty"`
	// Change is "added" or "changed".
	Change string `json:"change,omitempty"`
	// Runs says what would have run it.
	Runs string `json:"runs"`
	// Exec lists a new repository's executing keys (FindRepo).
	Exec []ConfigEntry `json:"exec,omitempty"`
	// Set by Neutralise: what box did, where the original is kept, how to restore it;
	// Error when it could not.
	Action  string `json:"action,omitempty"`
	Kept    string `json:"kept,omitempty"`
	Restore string `json:"restore,omitempty"`
	Error   string `json:"error,omitempty"`

	entry   Entry
	before  File
	pointer string
}

// Diff compares the snapshots taken before and after a run. It is pure. Only what lies
// in a writable root of after is a finding: nothing else could be the sandbox's doing.
func Diff(before, after *Snapshot) []Finding {
	var out []Finding
	var newDots []string
	for _, dot := range sortedKeys(after.Repos) {
		a := after.Repos[dot]
		b, existed := before.Repos[dot]
		if !existed {
			if after.writable(dot) {
				newDots = append(newDots, dot)
				out = append(out, Finding{Kind: FindRepo, Path: dot, Repo: dot, Change: "added", Exec: a.Exec,
					Runs: repoRuns(a)})
			}
			continue
		}
		if a.Kind == RepoPointer && (b.Kind != RepoPointer || a.Pointer != b.Pointer) && after.writable(dot) {
			f := Finding{Kind: FindPointer, Path: dot, Repo: dot, Change: "changed",
				Runs: fmt.Sprintf("git in %s uses %s as its repository (%d executing keys there)", filepath.Dir(dot), a.Gitdir, len(a.Exec))}
			if b.Kind == RepoPointer {
				f.pointer = b.Pointer
			} else {
				f.Change = "added"
			}
			out = append(out, f)
		}
		had := map[string]int{}
		for _, e := range b.Exec {
			had[entryID(e.Entry)]++
		}
		for _, e := range a.Exec {
			id := entryID(e.Entry)
			if had[id] > 0 {
				had[id]--
				continue
			}
			if !after.writable(e.File) {
				continue
			}
			k, _ := Executes(e.Entry)
			change := "added"
			if slices.ContainsFunc(b.Exec, func(x ConfigEntry) bool { return x.Name == e.Name }) {
				change = "changed"
			}
			out = append(out, Finding{Kind: FindConfig, Path: e.File, Repo: dot, Key: e.Name, Value: e.Value, Line: e.Line,
				Change: change, Runs: k.Runs, entry: e.Entry})
		}
		for _, f := range a.Unparsable {
			if !slices.Contains(b.Unparsable, f) && after.writable(f) {
				out = append(out, Finding{Kind: FindUnparsable, Path: f, Repo: dot, Change: "changed",
					Runs: "nothing: git refuses the file, so every git command in this repository fails"})
			}
		}
	}
	for _, p := range sortedKeys(after.Files) {
		a := after.Files[p]
		if a.Kind == "" || a.Kind == "dir" || !after.writable(p) {
			continue
		}
		if slices.ContainsFunc(newDots, func(d string) bool { return within(p, d) }) {
			continue // moved aside with its repository
		}
		b := before.Files[p]
		change := "added"
		if b.Kind != "" {
			if b.Kind == a.Kind && b.SHA256 == a.SHA256 && b.Mode == a.Mode && b.Link == a.Link {
				continue
			}
			change = "changed"
		}
		out = append(out, Finding{Kind: FindFile, Path: p, Change: change, Runs: a.Runs, before: b})
	}
	return out
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
