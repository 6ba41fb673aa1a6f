package protect

import (
	"fmt"
	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/heavy-duty/box/policy"
)

// FileKind is what lstat found at a path.
type FileKind string

const (
	File  FileKind = "file"
	Dir   FileKind = "dir"
	Link  FileKind = "symlink"
	Other FileKind = "other" // a fifo, socket or device
)

// Tree is what Scan learnt about the working directory: every fact Build needs, as
// fields.
type Tree struct {
	Workdir string
	// Tops are the project roots: the working directory and the top of every repository
	// nested in it. Project entries apply to each.
	Tops []string
	// GitDirs are the git directories found: each repository's .git (or the directory its
	// .git file names), and under each, .git/modules/* and .git/worktrees/*.
	GitDirs []GitDirFact
	// Pointers are the .git files found (worktrees, submodules).
	Pointers []string
	// Nested are the .git directories of repositories nested in the working directory
	// that are neither its repository's nor reached through a .git file.
	Nested []string
	// HooksPaths are the directories the repositories' core.hooksPath names (absolute).
	HooksPaths []string
	// HooksOutside are the hooks directories (core.hooksPath) of the repositories the
	// sandbox commits in that git inside does not run: the repository's own when it lies
	// outside the working directory (not in the sandbox: git skips a missing hooks
	// directory without a word), and your global config's wherever it lies (git inside
	// reads no global config of yours).
	HooksOutside []HooksFact
	// HookTools are the tools the hooks git runs inside (the repositories the sandbox
	// commits in) call by a path the sandbox may not show (hooktools.go).
	HookTools []HookToolFact
	// HookToolsMore counts those past the first maxHookToolFacts, not named.
	HookToolsMore int
	// Includes are the files the repositories' configs include (include.path,
	// includeIf.*.path) that lie in the working directory.
	Includes []string
	// EnvrcSources are the files in the working directory that a top's .envrc has direnv
	// load (EnvrcLoads).
	EnvrcSources []string
	// YarnSources are the files in the working directory that a yarn rc names for yarn
	// to run (YarnLoads).
	YarnSources []string
	// MiseSources are the files in the working directory that a mise config's [env] has
	// mise source or load (MiseLoads).
	MiseSources []string
	// HomeLinks are the paths in the working directory (links resolved) that an entry of
	// the home, ~/.config or ~/.local/bin links to.
	HomeLinks []string
	// HookLinks are the paths in the working directory (links resolved) that a hook of
	// a repository's hooks directory or core.hooksPath links to.
	HookLinks []string
	// Binds are git directories outside the working directory that commits inside need
	// (the common directory of the working directory's own worktree or submodule). Scan
	// lists only directories it verified belong to the working directory's .git file.
	Binds []string
	// Exists holds lstat's answer for every path Candidates lists; a missing key is absent.
	Exists map[string]FileKind
	// Truncated: the scan stopped at its bound; Dirs is how many directories it read.
	Truncated bool
	Dirs      int
	// Notes are the scanner's own remarks (a .git file that names nothing usable...).
	Notes []string
	// Listings are the directories the scan read, for the post-run audit's walk of the
	// same tree, which lists again only those changed since (package dirlist).
	Listings *dirlist.Cache `json:"-"`
	// scanned are the candidates Scan listed and lstatted into Exists, for the options it
	// was given: Build of this tree with the same options takes them, not listing them
	// again (thousands in a tree of many repositories).
	scanned *scannedCandidates
}

type scannedCandidates struct {
	add, drop []string            // the options they were listed for (copies)
	exists    map[string]FileKind // the Exists they were lstatted into
	list      []candidate
}

// candidatesFor is t.candidates(o): Scan's, when this tree is Scan's, with its Exists
// and the options Scan listed them for.
func (t Tree) candidatesFor(o Options) []candidate {
	if c := t.scanned; c != nil && slices.Equal(c.add, o.Add) && slices.Equal(c.drop, o.Drop) &&
		reflect.ValueOf(c.exists).UnsafePointer() == reflect.ValueOf(t.Exists).UnsafePointer() {
		return c.list
	}
	return t.candidates(o)
}

// HooksFact is a repository's hooks directory outside the working directory.
type HooksFact struct {
	Top    string // the repository's work tree
	Dir    string // the directory core.hooksPath names (absolute)
	Global bool   // named by your global git config, not the repository's
}

// GitDirFact is one git directory.
type GitDirFact struct {
	Path   string
	Linked bool // a linked worktree's (.git/worktrees/NAME)
	// WorktreeConfig: the (common) config may set extensions.worktreeConfig, so an
	// absent config.worktree gets a placeholder.
	WorktreeConfig bool
}

// Options are a profile's loosening and tightening of the set.
type Options struct {
	Add  []string // project-relative paths protected in addition
	Drop []string // entry names not protected
	// Path is the operator's PATH, split: a directory of it in the working directory
	// holds what the host's shell runs by name, which the launch says (not protected:
	// builds write there).
	Path []string
}

// Path is one concrete protected host path.
type Path struct {
	Path  string `json:"path"`
	Entry string `json:"entry"`
	Why   string `json:"why"`
	Dir   bool   `json:"dir,omitempty"`
	// Absent: nothing was there at launch. With a Placeholder, box puts one there (and
	// binds it read-only); without, the path stays creatable and the post-run audit
	// checks it.
	Absent      bool        `json:"absent,omitempty"`
	Placeholder Placeholder `json:"placeholder,omitempty"`
}

// Bound reports whether the path is bound read-only in the sandbox.
func (p Path) Bound() bool { return !p.Absent || p.Placeholder != NoPlaceholder }

// Set is the protected set of one launch.
type Set struct {
	// Protected lists every path, sorted; the bound ones are bound read-only in the
	// sandbox in this order.
	Protected []Path
	// Binds are the git directories outside the working directory bound read-write.
	Binds []string
	// Pins are directories bound onto themselves read-write (after Binds, before the
	// read-only binds): a mount point cannot be renamed or removed, so the sandbox
	// cannot move a protected path away and put its own in its place.
	Pins []string
	// Dropped and Added are the profile's loosening and additions, as named.
	Dropped, Added []string
	Warnings       []string
}

// ReadOnly lists the paths to bind read-only, in order.
func (s Set) ReadOnly() []string {
	var out []string
	for _, p := range s.Protected {
		if p.Bound() {
			out = append(out, p.Path)
		}
	}
	return out
}

// Placeholders lists the protected paths box must create before launch.
func (s Set) Placeholders() []Path {
	var out []Path
	for _, p := range s.Protected {
		if p.Absent && p.Placeholder != NoPlaceholder {
			out = append(out, p)
		}
	}
	return out
}

// Paths lists every concrete protected host path (bound or not), for the post-run audit.
func (s Set) Paths() []string {
	out := make([]string, len(s.Protected))
	for i, p := range s.Protected {
		out[i] = p.Path
	}
	return out
}

// CheckOptions validates a profile's protect_add and protect_drop.
func CheckOptions(o Options) error { return policy.CheckProtect(o.Add, o.Drop) }

// candidate is one (path, rule) pair before the facts are applied.
type candidate struct {
	path  string
	entry *Entry // in candidates' own copy of the entries: a tree of many repositories has
	// thousands of candidates, and a copy of its entry each was most of their memory
	root           string
	worktreeConfig bool // a GitDir entry's GitDirFact.WorktreeConfig
}

// roots are the sandbox's writable trees a protected path can lie in.
func (t Tree) roots() []string { return append([]string{t.Workdir}, t.Binds...) }

func rootOf(roots []string, p string) string {
	for _, r := range roots {
		if within(p, r) && p != r {
			return r
		}
	}
	return ""
}

func (t Tree) candidates(o Options) []candidate {
	drop := map[string]bool{}
	for _, d := range o.Drop {
		drop[d] = true
	}
	roots := t.roots()
	facts := map[Scope][]string{Pointer: t.Pointers, Nested: t.Nested, HooksPath: t.HooksPaths, Include: t.Includes, EnvrcSrc: t.EnvrcSources, YarnSrc: t.YarnSources, MiseSrc: t.MiseSources, HomeLink: t.HomeLinks, HookLink: t.HookLinks}
	project := Entries()
	for _, a := range o.Add {
		project = append(project, Entry{Name: a, Scope: Project, Path: a, Why: "added by the profile (protect_add)"})
	}
	// Sized once: a tree of many repositories has thousands of candidates, and growing
	// a slice of them by doubling cost more than making them.
	n := 0
	for _, e := range project {
		switch e.Scope {
		case GitDir:
			n += len(t.GitDirs)
		case Project:
			n += len(t.Tops)
		default:
			n += len(facts[e.Scope])
		}
	}
	out := make([]candidate, 0, n)
	// p is clean (filepath.Join's result, or cleaned by the caller).
	add := func(p string, e *Entry, wtc bool) {
		if r := rootOf(roots, p); r != "" {
			out = append(out, candidate{p, e, r, wtc})
		}
	}
	for i := range project {
		e := &project[i]
		if drop[e.Name] {
			continue
		}
		switch e.Scope {
		case GitDir:
			for _, g := range t.GitDirs {
				if e.Only == "" || (e.Only == LinkedGitDir) == g.Linked {
					add(filepath.Join(g.Path, e.Path), e, g.WorktreeConfig)
				}
			}
		case Pointer, Nested, HooksPath, Include, EnvrcSrc, YarnSrc, MiseSrc, HomeLink, HookLink:
			// Entries whose path is the fact itself.
			for _, p := range facts[e.Scope] {
				add(filepath.Clean(p), e, false)
			}
		case Project:
			for _, top := range t.Tops {
				add(filepath.Join(top, e.Path), e, false)
			}
		}
	}
	return out
}

// Candidates lists every path whose lstat Build needs: each candidate and each directory
// between it and its root. Scan stats exactly these.
func (t Tree) Candidates(o Options) []string { return candidatePaths(t.candidates(o)) }

// candidatePaths are Candidates' paths of cands.
func candidatePaths(cands []candidate) []string {
	seen := make(map[string]bool, len(cands))
	out := make([]string, 0, len(cands))
	for _, c := range cands {
		for p := c.path; p != c.root && !seen[p]; p = filepath.Dir(p) {
			seen[p] = true
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Build turns the tree's facts and the profile's options into the protected set. Pure.
func Build(t Tree, o Options) (Set, error) {
	if err := CheckOptions(o); err != nil {
		return Set{}, err
	}
	s := Set{Binds: slices.Clone(t.Binds), Dropped: slices.Clone(o.Drop), Added: slices.Clone(o.Add)}
	slices.Sort(s.Binds)
	s.Warnings = append(s.Warnings, t.Notes...)
	if t.Truncated {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the working directory holds more than %d directories (or is deeper than %d levels): repositories beyond the first %d directories read (breadth-first) are not protected during the run", scanDirs, scanDepth, t.Dirs))
	}
	cands := t.candidatesFor(o)
	byPath := make(map[string]Path, len(cands)) // sized once: thousands in a big tree
	for _, c := range cands {
		if _, dup := byPath[c.path]; dup {
			continue // the first rule naming a path wins (a protect_add of a built-in path)
		}
		// Every directory between the root and the path must be a real directory: a
		// link there would send the bind (and the mount point bwrap creates) elsewhere.
		p := Path{Path: c.path, Entry: c.entry.Name, Why: c.entry.Why, Dir: c.entry.Dir}
		parents := Dir
		for d := filepath.Dir(c.path); d != c.root && parents == Dir; d = filepath.Dir(d) {
			if k, found := t.Exists[d]; !found {
				parents = "" // an absent parent: nothing to bind, nowhere for a placeholder
			} else if k != Dir {
				parents = k
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s is not protected: %s is a %s, not a directory (box never binds through a link the sandbox may have planted)", c.path, d, k))
			}
		}
		if parents != Dir {
			if parents == "" {
				p.Absent = true // the post-run audit still looks there
				byPath[c.path] = p
			}
			continue
		}
		switch k, found := t.Exists[c.path]; {
		case !found:
			p.Absent, p.Placeholder = true, c.entry.Absent
			if c.entry.Name == "git:config.worktree" && !c.worktreeConfig {
				p.Placeholder = NoPlaceholder // git never reads it: no bind to pay for
			}
		case k == File || k == Dir:
			p.Dir = k == Dir
		default:
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s is not protected: it is a %s, not a file or directory (box never binds through a link; replace it with what it points to)", c.path, k))
			continue
		}
		byPath[c.path] = p
	}
	// Sorted by path: the keys are, then the paths taken in their order (a sort of the
	// paths themselves moved thousands of structs about, most of Build's time).
	keys := make([]string, 0, len(byPath))
	for k := range byPath {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		// A path inside a protected directory is covered by that directory's bind.
		if coveredBy(byPath, k) {
			continue
		}
		if s.Protected == nil {
			s.Protected = make([]Path, 0, len(keys))
		}
		s.Protected = append(s.Protected, byPath[k])
	}

	// Pins: a directory between a root and a bound path is bound onto itself, so it
	// cannot be renamed away with a look-alike put in its place, where the path is
	// fixed: inside and above every git directory (the host's git follows .git files and
	// commondir to them) and above the working directory's own project files. A nested
	// clone's or a submodule's work tree is not pinned: renaming it away and making a new
	// one is making a new repository, which only the post-run audit can catch, and each
	// bind costs launch time.
	pins := map[string]bool{}
	roots := t.roots()
	pinnable := func(d string) bool {
		for _, g := range t.GitDirs {
			if within(d, g.Path) || within(g.Path, d) {
				return true
			}
		}
		return false
	}
	for _, p := range s.Protected {
		if !p.Bound() {
			continue
		}
		e, builtin := Lookup(p.Entry)
		rel := p.Entry // a protect_add entry is named by its path
		if builtin {
			rel = e.Path
		}
		// A home link's target, a hooksPath, an include and what an .envrc, a yarn rc or
		// a mise config loads are pinned wherever they are: the home, a git config or the rc names their
		// path.
		named := builtin && (e.Scope == HomeLink || e.Scope == HookLink || e.Scope == HooksPath || e.Scope == Include || e.Scope == EnvrcSrc || e.Scope == YarnSrc || e.Scope == MiseSrc)
		topFile := (!builtin || e.Scope == Project) && filepath.Join(t.Workdir, rel) == p.Path || named
		r := rootOf(roots, p.Path)
		for d := filepath.Dir(p.Path); d != r; d = filepath.Dir(d) {
			if !coveredBy(byPath, d) && (topFile || pinnable(d)) {
				pins[d] = true
			}
		}
	}
	for d := range pins {
		s.Pins = append(s.Pins, d)
	}
	slices.Sort(s.Pins)
	for _, d := range o.Drop {
		e, _ := Lookup(d)
		s.Warnings = append(s.Warnings, fmt.Sprintf("the profile drops %s from the protected set (protect_drop): the sandbox can change it, and %s", d, e.Why))
	}
	return s, nil
}

// coveredBy reports whether a bound protected directory holds p (strictly).
func coveredBy(byPath map[string]Path, p string) bool {
	for d := filepath.Dir(p); d != "/" && d != "."; d = filepath.Dir(d) {
		if q, ok := byPath[d]; ok && q.Dir && q.Bound() {
			return true
		}
	}
	return false
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	// p has dir (without a trailing slash) and a slash as its prefix, compared in
	// place: a concatenation here allocated once per call, thousands of calls a run.
	d := strings.TrimSuffix(dir, "/")
	return len(p) > len(d) && p[len(d)] == '/' && p[:len(d)] == d
}
