// Package postrun is box's post-run audit: before a sandbox starts it records what in
// the working directory can make the host execute code (every git repository's config
// keys that run commands, hooks, protected files); after the command ends it compares,
// and moves aside whatever the sandbox added, so the host's next `git status` (or
// direnv, or editor) runs nothing the sandbox planted.
//
// Take (snapshot.go) is the one place that reads the filesystem for the audit; Diff is
// pure; Neutralise (quarantine.go) is the one place that changes it.
package postrun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"golang.org/x/sys/unix"
)

// Guard is a protected path: a file or directory some host tool executes or obeys on its
// own (direnv's .envrc, an editor's task file, git's hooks), and what runs it.
type Guard struct {
	Path string `json:"path"` // absolute
	Runs string `json:"runs"`
}

// Input is what Take needs, as facts.
type Input struct {
	// Workdir is the sandbox's working directory (its real path); every repository under
	// it and the one containing it are audited.
	Workdir string
	// Home expands ~/ in include paths and core.hooksPath.
	Home string
	// Writable are the host paths the sandbox could write (Workdir, read-write mounts,
	// gitdirs bound read-write): a change elsewhere was not the sandbox's. Empty means
	// [Workdir].
	Writable []string
	// Trees are the profile's read-write mounts that lie outside Workdir (their real
	// paths): each is walked as Workdir is (every repository in it and the one containing
	// it, with their configs and hooks, and the project files at its top and at the top
	// of every work tree in it). The sandbox writes them as it writes Workdir: a hook or a
	// core.fsmonitor it plants in a mounted repository runs on the host's next git there.
	Trees []string
	// Protected are the protected paths to watch (from the protected set).
	Protected []Guard
	// Loosened are the protected set's git entries a user profile dropped
	// (protect_drop): LooseHooks, LooseConfig, LooseWorktreeConfig, LoosePointer. The
	// audit honours them: what the profile lets the sandbox change is no finding.
	Loosened []string
	// GitdirGuards are files watched as they are in every main git directory (Path
	// relative to it: lazygit.yml), from the protected set's git entries the audit does
	// not read by meaning (config, hooks, commondir, gitdir it reads itself).
	GitdirGuards []Guard
	// TopGuards are the protected set's project files (Path relative: .envrc,
	// .vscode, ...), watched at the top of every work tree the audit finds in a writable
	// root, as the protected set keeps them at the top of every repository its scan found:
	// a repository past the scan's bound, or in a directory the scan does not enter
	// (node_modules), is still audited.
	TopGuards []Guard
	// AnyGuards are the project files a tool started in any directory obeys (Path
	// relative: .claude/settings.json, .mcp.json, .envrc, .vscode, ...), watched in every
	// directory of the writable roots outside node_modules: a later run, or the operator,
	// may start an agent or open an editor in a plain subdirectory.
	AnyGuards []Guard
	Limits    Limits
	// Listings are an earlier walk's directory listings (the protected set's scan, the
	// snapshot before the run), each reused only while its directory provably has not
	// changed (package dirlist); nil lists every directory.
	Listings *dirlist.Cache
}

// Limits bound the audit. Past any of them the snapshot is Incomplete, and the audit
// says so and fails (see Report.Err): it never calls a tree it did not read clean.
type Limits struct {
	Entries     int   // directory entries the walk visits (default 1,000,000)
	ConfigBytes int64 // bytes read per config file (default 1 MiB)
	Includes    int   // include depth, as git's own limit (default 10)
	GuardFiles  int   // files recorded under protected directories (default 10,000)
	KeepBytes   int64 // protected-file contents kept to restore them (default 4 MiB in all)
}

func (l Limits) withDefaults() Limits {
	if l.Entries <= 0 {
		l.Entries = 1_000_000
	}
	if l.ConfigBytes <= 0 {
		l.ConfigBytes = 1 << 20
	}
	if l.Includes <= 0 {
		l.Includes = 10
	}
	if l.GuardFiles <= 0 {
		l.GuardFiles = 10_000
	}
	if l.KeepBytes <= 0 {
		l.KeepBytes = 4 << 20
	}
	return l
}

// Snapshot is what can make the host execute code, at one moment.
type Snapshot struct {
	Workdir  string   `json:"workdir"`
	Home     string   `json:"home"`
	Writable []string `json:"writable"`
	// Trees: see Input.
	Trees    []string `json:"trees,omitempty"`
	Guards   []Guard  `json:"guards"`
	Loosened []string `json:"loosened"`
	// GitdirGuards: see Input.
	GitdirGuards []Guard `json:"gitdir_guards,omitempty"`
	// TopGuards, AnyGuards: see Input.
	TopGuards []Guard          `json:"top_guards,omitempty"`
	AnyGuards []Guard          `json:"any_guards,omitempty"`
	Repos     map[string]*Repo `json:"repos"` // by Dot
	// Files are the protected paths and everything under protected directories, by
	// absolute path; a path recorded absent has Kind "".
	Files map[string]File `json:"files"`
	// Unread are the paths in a writable root box could not list or read even after
	// granting itself the modes it needs (not the operator's, a read-only file system),
	// by path: what lies inside was not audited.
	Unread map[string]File `json:"unread,omitempty"`
	// Incomplete says which bound stopped the snapshot ("" when it is whole).
	Incomplete string `json:"incomplete,omitempty"`
	// Taken is when an incomplete snapshot ended (Unix nanoseconds, the fine clock; 0
	// for a whole one). Take returns only once the coarse clock has passed it, so every
	// inode born before Take returned is stamped at or before Taken, every one after later.
	Taken int64 `json:"taken"`
	// listings are this snapshot's walk's, for the next (Listings); never written.
	listings *dirlist.Cache
}

// Listings are the directory listings s's walk read or reused, for the next walk of the
// same tree (Input.Listings).
func (s *Snapshot) Listings() *dirlist.Cache { return s.listings }

// Repo is one git repository as the host's git would find it.
type Repo struct {
	// Dot is the .git entry (a directory, a pointer file, or a link), or a bare-looking
	// directory (HEAD, objects/, refs/) git would take for a repository.
	Dot     string `json:"dot"`
	Kind    string `json:"kind"`              // RepoDir, RepoPointer, RepoBare, RepoGitdir
	Pointer string `json:"pointer,omitempty"` // a pointer file's content
	Gitdir  string `json:"gitdir"`
	Common  string `json:"common"`
	// Born is Dot's birth time (statx; Unix nanoseconds, 0 when the filesystem does not
	// say): no process can set it, so it tells a repository made during a run from one
	// an incomplete snapshot did not reach.
	Born int64 `json:"born"`
	// Exec are the entries of the repository's config files (config, config.worktree and
	// everything they include, any condition) that ExecKeys match, in git's order.
	Exec []ConfigEntry `json:"exec"`
	// Unparsable are config files git would refuse (every git command then fails).
	Unparsable []string `json:"unparsable,omitempty"`
	// Commondir and GitdirFile are the git directory's commondir and gitdir files as
	// written ("" when absent): pointers the host's git follows to read a config or
	// write a .git file elsewhere (git worktree repair).
	Commondir  string `json:"commondir,omitempty"`
	GitdirFile string `json:"gitdir_file,omitempty"`
	// Worktree is the last core.worktree its config files set, as written ("" none): git
	// then works, and runs hooks, in that directory, and a relative core.hooksPath names
	// a directory there.
	Worktree string `json:"worktree,omitempty"`
}

// Repository kinds.
const (
	RepoDir     = "dir"
	RepoPointer = "pointer"
	RepoBare    = "bare"
	// RepoGitdir: a submodule's or linked worktree's git directory inside another's
	// (.git/modules/*, .git/worktrees/*), audited key by key, never moved.
	RepoGitdir = "gitdir"
)

// ConfigEntry is an executing entry and the file it is in.
type ConfigEntry struct {
	File string `json:"file"`
	Entry
	// Via are the include entries that led to File, outermost first.
	Via []Loc `json:"via"`
}

// Loc is where an entry is: its file and byte offset.
type Loc struct {
	File  string `json:"file"`
	Start int    `json:"start"`
}

// File is a protected file's state.
type File struct {
	Kind string `json:"kind,omitempty"` // "file", "dir", "link", "other"; "" absent
	Mode uint32 `json:"mode,omitempty"`
	Size int64  `json:"size,omitempty"`
	// Ino and the change time (which no process can set back) tell a changed file
	// without reading it: any write, chmod or replacement moves them.
	Ino   uint64 `json:"ino,omitempty"`
	Ctime int64  `json:"ctime_ns,omitempty"`
	Link  string `json:"link,omitempty"`
	Runs  string `json:"runs,omitempty"`
	// Hook: under a hooks directory, where git runs only exact hook names (a *.sample
	// never runs).
	Hook bool `json:"hook,omitempty"`
	// Todo: a rebase's todo list, which git rebase --continue carries on with; a finding
	// only when TodoExec, it holds an exec line (a command git runs through the shell).
	Todo     bool `json:"todo,omitempty"`
	TodoExec bool `json:"todo_exec,omitempty"`
	// Why: for an unread path, what refused it.
	Why string `json:"why,omitempty"`
	// Top: for a project file watched at the top of a work tree (Input.TopGuards), that
	// repository's .git entry: judged only when the repository was there before the run
	// (a new one is moved aside, its work tree's files stay, as in a plain directory).
	Top string `json:"top,omitempty"`
	// content is kept (within Limits.KeepBytes) to restore a changed file.
	content []byte
}

// Take records the snapshot: the walk of in.Workdir for .git entries and bare-looking
// directories, the repository containing it, their configs and hooks, and the protected
// paths.
func Take(in Input) *Snapshot {
	t := &taker{in: in, lim: in.Limits.withDefaults(), next: dirlist.New(in.Listings)}
	// Sized for the guards, most of the files recorded: a tree of 50 repositories has
	// some five thousand, and growing the map to them cost more than the lookups.
	s := &Snapshot{Workdir: in.Workdir, Repos: map[string]*Repo{}, Files: make(map[string]File, len(in.Protected)+len(in.Protected)/4), Unread: map[string]File{}, listings: t.next}
	// The modes granted to read the tree go back once it is read.
	defer t.acc.restore()
	s.Home, s.Writable, s.Guards, s.Loosened, s.GitdirGuards, s.TopGuards = in.Home, in.Writable, in.Protected, in.Loosened, in.GitdirGuards, in.TopGuards
	s.Trees, s.AnyGuards = in.Trees, in.AnyGuards
	if !DisableAnyGuards {
		t.anyFirst = map[string][]Guard{}
		for _, g := range in.AnyGuards {
			first, _, _ := strings.Cut(g.Path, "/")
			t.anyFirst[first] = append(t.anyFirst[first], g)
		}
	}
	if len(s.Writable) == 0 {
		s.Writable = []string{in.Workdir}
	}
	t.s = s
	if dot := containing(in.Workdir); dot != "" {
		t.repo(dot)
	}
	stop := t.next.Ahead(in.Listings) // the reused listings' stamps, on another thread
	t.walk(-1, "", in.Workdir, 0)
	t.trees()
	stop()
	// An absolute global core.hooksPath holds the hooks of every repository of yours on
	// the host, whatever the repositories found here set (or whether there is one).
	if hp := expand(t.globalHooksPath(), in.Home); filepath.IsAbs(hp) && s.writable(hp) {
		t.guardHooks(filepath.Clean(hp), "git runs hooks from here in every repository of yours (core.hooksPath in your global git config)")
	}
	for _, g := range in.Protected {
		t.guard(g.Path, g.Runs)
	}
	if s.Incomplete != "" { // Taken judges only what an incomplete snapshot missed
		sealTaken(s)
	}
	return s
}

// Input is what took s, to take its "after" again (an audit finished by a later run),
// with the project files s watched at work trees' tops (Watched).
func (s *Snapshot) Input() Input {
	return s.Watched(Input{Workdir: s.Workdir, Home: s.Home, Writable: s.Writable, Trees: s.Trees, Protected: s.Guards, Loosened: s.Loosened, GitdirGuards: s.GitdirGuards, TopGuards: s.TopGuards, AnyGuards: s.AnyGuards})
}

// Watched is in (the input of the snapshot after the run) also watching the project
// files s, the snapshot before it, watched at the top of a work tree (Input.TopGuards):
// a sandbox that removes a repository's .git (one the protected set's scan did not
// reach) must not take that work tree's .envrc out of the audit's sight with it.
func (s *Snapshot) Watched(in Input) Input {
	if DisableTopGuards || DisableWatched {
		return in
	}
	// The paths chosen first, then sorted: the same guards in the same order, without
	// sorting every path recorded (thousands in a tree of many repositories).
	var paths []string
	for p, f := range s.Files {
		if f.Top != "" && !f.Hook {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var add []Guard
	for _, p := range paths {
		add = append(add, Guard{Path: p, Runs: s.Files[p].Runs})
	}
	if len(add) > 0 {
		in.Protected = append(slices.Clip(in.Protected), add...)
	}
	return in
}

type taker struct {
	in       Input
	globalHP *string // the global config's core.hooksPath, read once
	lim      Limits
	s        *Snapshot
	entries  int
	guarded  int
	kept     int64
	acc      access
	dirs     map[string]string  // realDir's resolved directories, for this snapshot
	links    map[string]bool    // the directories resolveDir found to be links
	buf      []byte             // the walk's getdents buffer
	ents     []dirent           // the walk's entries, reused from one directory to the next
	listed   map[string]names   // guardAs's listings of guards' directories
	next     *dirlist.Cache     // the walk's listings, for the next walk
	top      string             // the .git entry whose work tree's project files are being guarded
	listing  []dirlist.Ent      // the listing being read, to keep in next
	anyFirst map[string][]Guard // Input.AnyGuards by their path's first name
}

// open opens dir to list it. A directory in a writable root that refuses the operator
// (the sandbox chmodded it) is granted u+rx first: git, run later by the same user, goes
// in by name, so the audit must see what is inside. What still cannot be opened is
// recorded unread.
func (t *taker) open(dir string) (*os.File, bool) {
	var f *os.File
	ok := t.opening(dir, func() (err error) { f, err = os.Open(dir); return err })
	return f, ok
}

// opening runs try (an open of dir), granting the modes it needs and trying again (see
// open); what still fails is recorded unread.
func (t *taker) opening(dir string, try func() error) bool {
	err := try()
	if err != nil && denied(err) && t.s.writable(dir) {
		t.acc.reach(t.rootOf(dir), dir)
		if gerr := t.acc.grant(dir, 0o500); gerr == nil {
			err = try()
		}
	}
	if err != nil {
		t.unread(dir, err)
		return false
	}
	return true
}

// rootOf is the writable root holding p.
func (t *taker) rootOf(p string) string {
	for _, r := range t.s.Writable {
		if within(p, r) {
			return r
		}
	}
	return p
}

// unread records p, which box could not open, when the sandbox could have reached it:
// in a writable root, and searchable or writable by the operator (what nobody can enter
// hides nothing from git either). A path that vanished is no finding.
func (t *taker) unread(p string, err error) {
	if DisableModeRepair || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || !t.s.writable(p) {
		return
	}
	if nobodyEnters(p) {
		return
	}
	f := t.stat(p, true)
	f.Why = err.Error()
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		f.Why = pe.Err.Error()
	}
	t.s.Unread[p] = f
}

// nobodyEnters reports whether the operator can neither search, write nor read p, each
// refused for its permissions: git, run later as the operator, cannot go in either. An
// answer other than a refusal (a path longer than the kernel takes, ENAMETOOLONG; a loop
// of links) proves nothing: a hostile review (session 16) planted a repository below a
// path longer than PATH_MAX, the walk's open and every access(2) failed with
// ENAMETOOLONG, and the audit skipped it in silence.
func nobodyEnters(p string) bool {
	for _, mode := range []uint32{unix.X_OK, unix.W_OK, unix.R_OK} {
		err := unix.Access(p, mode)
		if err == nil {
			return false
		}
		refused := errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) || errors.Is(err, unix.ENOENT)
		if !refused && !DisableTooLong {
			return false
		}
	}
	return true
}

// globalHooksPath is core.hooksPath from your global git config (~/.gitconfig, read after
// ~/.config/git/config, wins, as in git), "" if none. Read once per snapshot.
func (t *taker) globalHooksPath() string {
	if t.globalHP == nil {
		hp := ""
		if t.in.Home != "" {
			for _, g := range []string{filepath.Join(t.in.Home, ".config", "git", "config"), filepath.Join(t.in.Home, ".gitconfig")} {
				b, err := readRegular(g, t.lim.ConfigBytes)
				if err != nil {
					continue
				}
				es, _ := ParseConfig(b)
				for _, e := range es {
					if e.Name == "core.hookspath" && e.HasValue {
						hp = e.Value
					}
				}
			}
		}
		t.globalHP = &hp
	}
	return *t.globalHP
}

func (t *taker) incomplete(why string) {
	if t.s.Incomplete == "" {
		t.s.Incomplete = why
	}
}

// trees walks the read-write mounts outside the working directory (Input.Trees) as the
// working directory is walked: a sandbox that writes a mounted repository plants there
// what the host's git in it runs (hostile review, session 16: the walk read only the
// working directory, and a hook and a core.fsmonitor planted in a mounted ~/lib ran on
// the operator's next git status and commit there, unreported). The project files the
// protected set names are watched at each mount's top too, as at the working
// directory's. A mount that is not a directory is not walked (the launch says so).
func (t *taker) trees() {
	if DisableMountTrees {
		return
	}
	for _, root := range t.in.Trees {
		if within(root, t.in.Workdir) {
			continue // walked with the working directory
		}
		if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.unread(root, err)
			}
			continue
		}
		if dot := containing(root); dot != "" {
			t.repo(dot)
		}
		t.walk(-1, "", root, 0)
		for _, g := range t.in.TopGuards {
			t.guard(filepath.Join(root, g.Path), g.Runs)
		}
	}
}

// containing is the .git entry (or bare directory) of the repository that holds dir,
// found upward from dir's parent as git's discovery would.
func containing(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return filepath.Join(d, ".git")
		}
		if bareLooking(d) {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// bareLooking reports whether git takes d for a git directory: a HEAD, and objects/ and
// refs/ of its own or a commondir naming where they are (git accepts that as well).
func bareLooking(d string) bool {
	if _, err := os.Lstat(filepath.Join(d, "HEAD")); err != nil {
		return false
	}
	if _, err := os.Lstat(filepath.Join(d, "commondir")); err == nil {
		return true
	}
	for _, n := range []string{"objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(d, n)); err != nil {
			return false
		}
	}
	return true
}

// gitRealPath is p as git resolves a gitdir: or commondir path: links first, then "..",
// component by component, as the kernel does (a textual Clean would take "link/.." for
// "."; git reads the config and hooks where the link leads). A path that does not
// resolve names no repository git would use; it is kept as written, cleaned.
func gitRealPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// heldFds bounds the directories the walk keeps open, to open their subdirectories by
// name from them (one path component for the kernel to resolve, not the whole path
// again); deeper, each is opened by its path.
const heldFds = 32

// walk visits dir's tree without following links or entering .git directories, and
// takes every repository it meets. parent, when not -1, is dir's parent directory, open,
// and name dir's name in it.
func (t *taker) walk(parent int, name, dir string, depth int) {
	if ents, ok := t.in.Listings.Reuse(dir, t.next); ok {
		t.walkListed(dir, ents, depth)
		return
	}
	var fd int
	if !t.opening(dir, func() (err error) { fd, err = openDirAt(parent, name, dir); return err }) {
		return
	}
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	var marks gitMarks
	var subdirs []string
	// A buffer at a time, so a directory of millions of entries stops at the bound, not
	// after listing them all.
	if t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	stamp := t.next.Stat(fd) // before reading: see dirlist
	t.listing = t.listing[:0]
	whole := false
	for {
		ents, err := readDirentsInto(fd, t.buf, t.ents[:0])
		if ents != nil {
			t.ents = ents[:0]
		}
		for _, e := range ents {
			if !t.entry(dir, e.name, e.dir, &marks, &subdirs) {
				return
			}
			// The type as lstat says (the protected set's scan of the next run reads
			// it, dirlist.Load): DT_DIR exactly when the walk enters it.
			t.listing = append(t.listing, dirlist.Ent{Name: e.name, Type: e.typ})
		}
		if err != nil {
			t.unread(dir, &fs.PathError{Op: "readdirent", Path: dir, Err: err})
			break
		}
		if ents == nil {
			whole = true
			break
		}
	}
	if whole {
		t.next.Put(dir, stamp, t.listing)
	}
	held := fd
	if depth >= heldFds || len(subdirs) == 0 {
		unix.Close(fd)
		held = -1
	}
	fd = -1
	if held >= 0 {
		defer unix.Close(held)
	}
	if marks.gitDir() {
		t.repo(dir)
	}
	t.guardAnywhere(dir, marks.any)
	for _, n := range subdirs {
		t.walk(held, n, t.child(dir, n, depth), depth+1)
	}
}

// walkListed is walk for a directory whose listing an earlier walk read (and its
// subdirectories, each listed or reused in turn): the same entries visited, counted and
// judged, without reading the directory again.
func (t *taker) walkListed(dir string, ents []dirlist.Ent, depth int) {
	var marks gitMarks
	var subdirs []string
	for _, e := range ents {
		if !t.entry(dir, e.Name, e.Type == unix.DT_DIR, &marks, &subdirs) {
			return
		}
	}
	if marks.gitDir() {
		t.repo(dir)
	}
	t.guardAnywhere(dir, marks.any)
	for _, n := range subdirs {
		t.walk(-1, n, t.child(dir, n, depth), depth+1)
	}
}

// guardAnywhere guards, in dir, the project files a tool started there obeys
// (Input.AnyGuards) whose first names the listing holds, outside node_modules. After the
// directory's entries, so a repository's top guards (its .git among them) come first.
func (t *taker) guardAnywhere(dir string, names []string) {
	if len(names) == 0 || strings.Contains(dir+"/", "/node_modules/") {
		return
	}
	for _, n := range names {
		for _, g := range t.anyFirst[n] {
			t.guard(filepath.Join(dir, g.Path), g.Runs)
		}
	}
}

// anywhere: guardAnywhere guards path in dir (an Input.AnyGuards entry, outside
// node_modules).
func (t *taker) anywhere(dir, path string) bool {
	if strings.Contains(dir+"/", "/node_modules/") {
		return false
	}
	first, _, _ := strings.Cut(path, "/")
	for _, g := range t.anyFirst[first] {
		if g.Path == path {
			return true
		}
	}
	return false
}

// gitMarks are the entries of a directory that make it a git directory. git takes
// objects/ and refs/ through links too: any entry of those names counts.
type gitMarks struct {
	head, objects, refs, commondir bool
	any                            []string // names of Input.AnyGuards' first parts here
}

// gitDir: a HEAD with objects and refs, or with a commondir (objects and refs are the
// common directory's), is a git directory.
func (m gitMarks) gitDir() bool { return m.head && (m.objects && m.refs || m.commondir) }

// entry counts and judges one entry n of dir, for both walks (listed now or reused): a
// .git is taken as a repository, a directory is queued in subdirs. It reports false when
// the walk must stop (the entry bound).
func (t *taker) entry(dir, n string, isDir bool, m *gitMarks, subdirs *[]string) bool {
	if t.entries++; t.entries > t.lim.Entries {
		what := "the working directory has"
		if len(t.in.Trees) > 0 && !DisableMountTrees {
			what = "the working directory and the read-write mounts have"
		}
		t.incomplete(fmt.Sprintf("%s more than %d entries; the walk stopped at %s", what, t.lim.Entries, dir))
		return false
	}
	m.head, m.objects, m.refs = m.head || n == "HEAD", m.objects || n == "objects", m.refs || n == "refs"
	m.commondir = m.commondir || n == "commondir"
	if t.anyFirst[n] != nil {
		m.any = append(m.any, n)
	}
	switch {
	case n == ".git":
		t.repo(filepath.Join(dir, n))
	case isDir:
		*subdirs = append(*subdirs, n)
	}
	return true
}

// repo records the repository whose .git entry (or bare directory) is dot.
func (t *taker) repo(dot string) { t.repoKind(dot, "") }

func (t *taker) repoKind(dot, kind string) {
	if _, ok := t.s.Repos[dot]; ok {
		return
	}
	r := &Repo{Dot: dot}
	t.s.Repos[dot] = r
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, dot, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &sx) == nil && sx.Mask&unix.STATX_BTIME != 0 {
		r.Born = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	fi, err := os.Stat(dot)
	switch {
	case err != nil:
		return // a dangling .git link: git finds no repository there
	case kind == RepoGitdir:
		r.Kind, r.Gitdir = RepoGitdir, dot
	case filepath.Base(dot) != ".git":
		r.Kind, r.Gitdir = RepoBare, dot
	case fi.IsDir():
		r.Kind, r.Gitdir = RepoDir, dot
	default:
		r.Kind = RepoPointer
		b, err := readRegular(dot, 4096)
		if err != nil {
			return
		}
		r.Pointer = string(b)
		gd, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
		if !ok {
			return
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Dir(dot) + "/" + gd // not Join: it would clean "link/.." as text
		}
		r.Gitdir = gitRealPath(gd)
	}
	r.Common = r.Gitdir
	if kind == RepoGitdir {
		r.GitdirFile = t.pointerFile(filepath.Join(r.Gitdir, "gitdir"))
	}
	if r.Commondir = t.pointerFile(filepath.Join(r.Gitdir, "commondir")); r.Commondir != "" {
		c := strings.TrimRight(r.Commondir, "\r\n")
		if !filepath.IsAbs(c) {
			c = r.Gitdir + "/" + c
		}
		r.Common = gitRealPath(c)
	}
	files := []string{filepath.Join(r.Common, "config")}
	if r.Common != r.Gitdir {
		files = append(files, filepath.Join(r.Gitdir, "config"))
	}
	files = append(files, filepath.Join(r.Gitdir, "config.worktree"))
	if r.Common != r.Gitdir && !DisableCommonScan {
		// The main worktree's own: git there reads it (extensions.worktreeConfig), and
		// the sandbox in a linked worktree can write it where it is not bound read-only
		// (the Landlock mode).
		files = append(files, filepath.Join(r.Common, "config.worktree"))
	}
	for _, f := range files {
		t.config(r, f, nil)
	}
	// Files other tools obey in a git directory (lazygit's), as they are.
	for _, g := range t.in.GitdirGuards {
		t.guard(filepath.Join(r.Common, g.Path), g.Runs)
	}
	// The project files at the top of its work tree (.envrc, .vscode/, ...): the
	// protected set keeps them only where its scan found the repository.
	if (r.Kind == RepoDir || r.Kind == RepoPointer) && !DisableTopGuards && t.s.writable(filepath.Dir(dot)) {
		t.top = dot
		for _, g := range t.in.TopGuards {
			if t.anywhere(filepath.Dir(dot), g.Path) {
				// Judged as in any directory (guardAnywhere), not only when the
				// repository was there before the run: a hostile review (session 19)
				// ran git init in a directory and wrote its .envrc and
				// .claude/settings.json; the new repository's .git was moved aside,
				// and what direnv and Claude Code obey there stayed, unreported.
				continue
			}
			t.guard(filepath.Join(filepath.Dir(dot), g.Path), g.Runs)
		}
		t.top = ""
	}
	// Hooks, wherever they are run from.
	runs := "git runs hooks/NAME on its event (commit, checkout, merge, push, ...)"
	t.guardHooks(filepath.Join(r.Common, "hooks"), runs)
	if r.Gitdir != r.Common {
		t.guardHooks(filepath.Join(r.Gitdir, "hooks"), runs)
	}
	// A relative core.hooksPath names a directory in the work tree git runs the hook in:
	// the .git entry's directory, or the one core.worktree names. A hostile review (the
	// Landlock mode, where the config is writable) added core.worktree = ../sub to a
	// repository whose hooks are in .husky, planted sub/.husky/pre-commit, and the host's
	// git commit ran it: the audit watched only .husky.
	tops := []string{worktreeOf(r)}
	if r.Worktree != "" && !DisableWorktreeHooks {
		w := expand(r.Worktree, t.in.Home)
		if !filepath.IsAbs(w) {
			w = filepath.Join(r.Gitdir, w) // relative to the git directory, as git reads it
		}
		tops = append(tops, filepath.Clean(w))
	}
	hooksAt := func(hp, runs string) {
		p := expand(hp, t.in.Home)
		if filepath.IsAbs(p) {
			t.guardHooks(filepath.Clean(p), runs)
			return
		}
		for _, top := range tops {
			t.guardHooks(filepath.Join(top, p), runs)
		}
	}
	own := false
	for _, e := range r.Exec {
		if e.Name == "core.hookspath" && e.HasValue && e.Value != "" {
			own = true
			hooksAt(e.Value, "git runs hooks from here (core.hooksPath)")
		}
	}
	// Without one of its own, the global config's: relative, it names a directory in
	// every work tree (core.hooksPath = .githooks).
	if hp := t.globalHooksPath(); !own && hp != "" {
		hooksAt(hp, "git runs hooks from here (core.hooksPath in your global git config)")
	}
	// A rebase stopped in the sandbox (a conflict, a break) is carried on by the host's
	// git rebase --continue, which runs the todo list's exec lines.
	if r.Gitdir != "" {
		t.todos(r.Gitdir)
	}
	// The git directories of its submodules and linked worktrees, wherever their work
	// trees are.
	if r.Kind == RepoDir || r.Kind == RepoBare || r.Kind == RepoGitdir {
		t.gitdirs(filepath.Join(r.Gitdir, "modules"), 0)
		if r.Kind != RepoGitdir || filepath.Base(filepath.Dir(r.Gitdir)) != "worktrees" {
			t.worktrees(r.Gitdir)
		}
	}
	// The common directory's too, when it is not this git directory: a linked worktree
	// (the working directory itself, its main repository outside the tree) reaches it
	// through commondir, the sandbox writes it, and a worktrees/NAME/gitdir made there
	// makes the host's git worktree repair write a .git file wherever it names.
	// The common directory is the main worktree's git directory too: a rebase or
	// cherry-pick left stopped there is carried on by the host's git in the main worktree.
	if r.Common != "" && r.Common != r.Gitdir && !DisableCommonScan {
		t.gitdirs(filepath.Join(r.Common, "modules"), 0)
		t.worktrees(r.Common)
		t.todos(r.Common)
	}
}

// todos guards a git directory's stopped rebase and sequencer state: the host's git
// rebase (cherry-pick, revert) --continue, which git status tells you to run, runs the
// todo list's exec lines and the strategy it names.
func (t *taker) todos(gd string) {
	t.guardTodo(filepath.Join(gd, "rebase-merge", "git-rebase-todo"),
		"git rebase --continue (git status tells you to run it) runs the todo list's exec lines through the shell", TodoExecs)
	// The merge strategy a stopped rebase or cherry-pick carries on with: git runs
	// git-merge-NAME, and a NAME with a slash is a path from the work tree.
	t.guardTodo(filepath.Join(gd, "rebase-merge", "strategy"),
		"git rebase --continue runs git-merge-STRATEGY (a strategy with a slash is a program in the work tree)", StrategyExecs)
	t.guardTodo(filepath.Join(gd, "sequencer", "opts"),
		"git cherry-pick/revert --continue runs git-merge-STRATEGY for the options' strategy", SequencerOptsExec)
	t.guardTodo(filepath.Join(gd, "sequencer", "todo"),
		"git cherry-pick/revert --continue carries on with the sequencer's todo list, exec lines included", TodoExecs)
}

// worktrees takes the linked worktrees' git directories under gd/worktrees. An entry
// there that is a link is watched as a protected path: git follows it (git worktree
// repair writes a .git file wherever the gitdir file behind it names), and a hostile
// review planted worktrees/NAME as a link to a directory of the work tree holding such a
// gitdir; the listing took only directories, and the host's git worktree repair made the
// home a work tree. Git never makes such a link: added or changed, it is a finding.
func (t *taker) worktrees(gd string) {
	ws, err := t.readDir(filepath.Join(gd, "worktrees"))
	if err != nil {
		return
	}
	for _, w := range ws {
		p := filepath.Join(gd, "worktrees", w.Name())
		switch {
		case w.IsDir():
			t.repoKind(p, RepoGitdir)
		case w.Type()&fs.ModeSymlink != 0 && !DisableWorktreeLinks:
			t.guard(p, "git follows this link as a linked worktree's git directory: git worktree repair writes a .git file where its gitdir names, prune deletes by it")
		}
	}
}

// pointerFile is the content of a small git pointer file (commondir, gitdir), "" when
// there is none. One that is there but cannot be read is recorded unread, and its content
// taken as unknown (never as absent).
func (t *taker) pointerFile(p string) string {
	b, err := t.read(p, 4096)
	switch {
	case err == nil:
		return string(b)
	case errors.Is(err, fs.ErrNotExist):
		return ""
	}
	t.unread(p, err)
	return "\x00unreadable"
}

// read is readRegular, granting the modes to read p when the sandbox could have taken
// them away (see open): git, run by you after a chmod back, would read it.
func (t *taker) read(p string, max int64) ([]byte, error) {
	b, err := readRegular(p, max)
	if err != nil && denied(err) && t.s.writable(p) && !DisableModeRepair {
		t.acc.reach(t.rootOf(p), p)
		if t.acc.grant(p, 0o400) == nil {
			b, err = readRegular(p, max)
		}
	}
	return b, err
}

// readDir lists dir, granting the modes to (see open).
func (t *taker) readDir(dir string) ([]fs.DirEntry, error) {
	f, ok := t.open(dir)
	if !ok {
		return nil, fs.ErrPermission
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		t.unread(dir, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// gitdirs takes the submodule git directories under dir (a directory with a HEAD is one;
// a submodule's name may hold slashes, so others are searched, to a bound).
func (t *taker) gitdirs(dir string, depth int) {
	if depth > 6 {
		return
	}
	ents, err := t.readDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
			t.repoKind(p, RepoGitdir)
		} else {
			t.gitdirs(p, depth+1)
		}
	}
}

// worktreeOf is where git runs hooks for r: its worktree's top (a bare repository: the
// gitdir).
func worktreeOf(r *Repo) string {
	if r.Kind == RepoBare {
		return r.Gitdir
	}
	return filepath.Dir(r.Dot)
}

func expand(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// config reads one config file into r, following its includes as git would (relative to
// the including file, ~/ from Home, every condition taken as true). via are the include
// entries that led here.
func (t *taker) config(r *Repo, file string, via []Loc) {
	file = t.realDir(file)
	depth := len(via)
	b, err := t.read(file, t.lim.ConfigBytes)
	if errors.Is(err, errTooBig) {
		t.incomplete(fmt.Sprintf("%s is larger than %d bytes", file, t.lim.ConfigBytes))
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errTooBig) {
			t.unread(file, err)
		}
		return // git ignores a missing include, and box cannot read what is not a file
	}
	es, perr := ParseConfig(b)
	if perr != nil {
		r.Unparsable = append(r.Unparsable, file)
	}
	for _, e := range es {
		if _, ok := Executes(e); ok {
			r.Exec = append(r.Exec, ConfigEntry{File: file, Entry: e, Via: via})
		}
		if e.Name == "core.worktree" && e.HasValue {
			r.Worktree = e.Value
		}
		sec, _, key := e.Parts()
		if key == "path" && (sec == "include" || sec == "includeif") && e.HasValue && e.Value != "" {
			if depth+1 > t.lim.Includes {
				t.incomplete(fmt.Sprintf("%s includes deeper than %d files", file, t.lim.Includes))
				continue
			}
			p := expand(e.Value, t.in.Home)
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(file), p)
			}
			t.config(r, filepath.Clean(p), append(slices.Clip(via), Loc{file, e.Start}))
		}
	}
}

// guard records the protected path p and, for a directory, everything under it.
func (t *taker) guard(p, runs string) { t.guardAs(p, runs, false) }

func (t *taker) guardHooks(p, runs string) { t.guardAs(p, runs, true) }

func (t *taker) guardAs(p, runs string, hook bool) {
	lex := p
	p = t.realDir(p)
	t.guardLinks(lex, runs)
	if _, ok := t.s.Files[p]; ok {
		return
	}
	var f File // absent
	if !t.absent(p) {
		f = t.stat(p, hook)
	}
	f.Runs, f.Hook, f.Top = runs, hook, t.top
	t.s.Files[p] = f
	if f.Kind != "dir" {
		return
	}
	t.guardTree(p, runs, hook)
}

// guardLinks records, as protected paths themselves, the links in a writable root that
// the protected path p is reached through. A hostile review made .claude a link to the
// instance directory's ~/.claude, which the sandbox writes and which is no root the
// audit judges: the host's Claude Code then read the sandbox's hooks as the project's
// settings, and the audit, judging the file where the link led, said nothing. The link
// is what the run made in the tree: added or changed, it is the finding, moved aside.
func (t *taker) guardLinks(p, runs string) {
	if len(t.links) == 0 || DisableLinkGuards {
		return
	}
	for a := filepath.Dir(p); t.s.writable(a) && !slices.Contains(t.s.Writable, a); a = filepath.Dir(a) {
		if !t.links[a] {
			continue
		}
		if _, ok := t.s.Files[a]; !ok {
			f := t.stat(a, false)
			rel, _ := filepath.Rel(filepath.Dir(a), p)
			f.Runs = rel + " is read through this link: " + runs
			t.s.Files[a] = f
		}
	}
}

// guardTree records everything under the protected directory dir.
func (t *taker) guardTree(dir, runs string, hook bool) bool {
	ents, err := t.readDir(dir)
	if err != nil && len(ents) == 0 {
		return true
	}
	for _, e := range ents {
		q := filepath.Join(dir, e.Name())
		if hook && strings.HasSuffix(q, ".sample") && !e.IsDir() {
			continue // git runs no *.sample: not worth a stat
		}
		if t.guarded++; t.guarded > t.lim.GuardFiles {
			t.incomplete(fmt.Sprintf("more than %d files under protected directories", t.lim.GuardFiles))
			return false
		}
		g := t.stat(q, hook)
		g.Runs, g.Hook, g.Top = runs, hook, t.top
		t.s.Files[q] = g
		if g.Kind == "dir" && !t.guardTree(q, runs, hook) {
			return false
		}
	}
	return true
}

// guardTodo records a file of a stopped rebase or sequencer that the host's --continue
// obeys, and whether execs finds a command in it (a finding only then).
func (t *taker) guardTodo(p, runs string, execs func([]byte) bool) {
	p = t.realDir(p)
	if _, ok := t.s.Files[p]; ok {
		return
	}
	f := t.stat(p, false)
	f.Todo, f.Runs = true, runs
	if f.Kind != "" {
		// Read as git reads it, through a link; one box cannot read is taken to execute.
		b, err := readRegular(p, t.lim.ConfigBytes)
		f.TodoExec = err != nil || execs(b)
	}
	t.s.Files[p] = f
}

// builtinStrategies are the merge strategies git has built in: naming one runs nothing
// but git.
var builtinStrategies = []string{"ort", "recursive", "resolve", "octopus", "ours", "subtree"}

// StrategyExecs reports whether a rebase's strategy file names a strategy git would run
// as a program (git-merge-NAME): anything but a built-in one.
func StrategyExecs(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return s != "" && !slices.Contains(builtinStrategies, s)
}

// SequencerOptsExec reports whether a sequencer's opts file (git-config syntax) sets a
// strategy that is not built in, or cannot be read as plain key = value lines (taken to
// execute: git's parser is the judge, and box does not second-guess it).
func SequencerOptsExec(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '[' || l[0] == '#' || l[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue // a boolean key
		}
		if strings.EqualFold(strings.TrimSpace(k), "strategy") {
			v = strings.Trim(strings.TrimSpace(v), `"`)
			if !slices.Contains(builtinStrategies, v) {
				return true
			}
		}
		if strings.ContainsAny(l, `\`) {
			return true // continuation or escape: not plain
		}
	}
	return false
}

// TodoExecs reports whether a rebase todo list holds a line git runs as a command:
// exec (or x) and its argument, after any leading blanks (rebase's sequencer parser).
func TodoExecs(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		w := strings.Fields(l)
		if len(w) > 0 && (w[0] == "exec" || w[0] == "x") {
			return true
		}
	}
	return false
}

func (t *taker) stat(p string, hook bool) File {
	fi, err := os.Lstat(p)
	if err != nil && denied(err) && t.s.writable(p) && !DisableModeRepair {
		t.acc.reach(t.rootOf(p), p) // a directory above made unsearchable
		fi, err = os.Lstat(p)
	}
	if err != nil {
		if !DisableModeRepair && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && t.s.writable(p) {
			t.s.Unread[p] = File{Kind: "other", Why: err.Error()} // a directory above not ours
		}
		return File{}
	}
	f := File{Mode: uint32(fi.Mode()), Size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.Ino, f.Ctime = st.Ino, st.Ctim.Nano()
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		f.Kind = "link"
		f.Link, _ = os.Readlink(p)
	case fi.IsDir():
		f.Kind = "dir"
	case fi.Mode().IsRegular():
		f.Kind = "file"
		// A protected file's content is kept, within the bound, to put it back if the
		// run changes it; a hook's is not (hooks only ever gain files: git init's own
		// samples never run).
		if !hook && t.kept+fi.Size() <= t.lim.KeepBytes {
			if b, err := t.read(p, fi.Size()); err == nil {
				t.kept += int64(len(b))
				f.content = b
			}
		}
	default:
		f.Kind = "other"
	}
	return f
}

// coarseNow is the clock filesystems stamp inodes with (a tick behind the fine one): a
// repository made after it began is born no earlier.
func coarseNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().Add(-time.Second).UnixNano()
	}
	return ts.Nano()
}

// sealTaken stamps s.Taken and waits for the coarse clock to pass it. Inode times come
// from the coarse clock or, with multigrain timestamps, from the fine one, never ahead
// of it: so a repository born before this is stamped no later than Taken, and one born
// after it later. The wait is at most a clock tick (bounded at 100 ms).
func sealTaken(s *Snapshot) {
	s.Taken = time.Now().UnixNano()
	for range 1000 {
		if coarseNow() > s.Taken {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// realDir is p with the links in its directory resolved (its last part is kept: a link
// there is judged as a link). Paths are compared with the writable roots as real paths,
// so a link planted in the working directory can never make a file outside look like one
// inside, to be edited or moved.
func realDir(p string) string {
	if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(d, filepath.Base(p))
	}
	return p
}

// realDir is realDir for one snapshot: each directory is resolved once. The protected
// set names some eighty paths in every project directory (and a repository's audit a
// dozen in its git directory); resolving each one's directory afresh lstats every
// component of it every time, which made the audit of a tree of 50 repositories cost
// tens of thousands of lstats. The links are read once per snapshot, as the walk reads
// each directory once: a snapshot is one look at the tree.
func (t *taker) realDir(p string) string {
	d, ok := t.resolveDir(filepath.Dir(p))
	if !ok || d == "" {
		return p // refused, or not there: p kept as written, as realDir
	}
	base := filepath.Base(p)
	if len(p) == len(d)+1+len(base) && p[len(d)] == '/' && p[:len(d)] == d && d != "/" && simpleName(base) {
		return p // no link on the way, p clean: filepath.Join(d, base) is p
	}
	return child(d, base)
}

// child is the path of the entry name of the walk's directory dir at depth: below the
// root (as given, maybe not clean) dir is clean, a join's result.
func (t *taker) child(dir, name string, depth int) string {
	if depth == 0 {
		return filepath.Join(dir, name)
	}
	return child(dir, name)
}

// child is filepath.Join(dir, name) for a clean dir, without cleaning again what is
// clean: a walk's and a guard's paths were thousands of Cleans a snapshot.
func child(dir, name string) string {
	if dir == "/" || !simpleName(name) {
		return filepath.Join(dir, name)
	}
	return dir + "/" + name
}

// simpleName: name is one path element joining leaves as it is (not "", ".", ".." and
// without a slash).
func simpleName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// resolveDir is filepath.EvalSymlinks(dir), remembered for the snapshot: "" when dir is
// not there, ok false when it could not be resolved (refused: a mode the audit may yet
// grant itself, so asked again next time). Resolved parent first, each directory costs
// one lstat, not one per component of its path: the protected set's directories in 50
// repositories were some two thousand lstats per snapshot.
func (t *taker) resolveDir(dir string) (string, bool) {
	if d, ok := t.dirs[dir]; ok {
		return d, true
	}
	if t.dirs == nil {
		t.dirs = map[string]string{}
	}
	parent := filepath.Dir(dir)
	if parent == dir || !filepath.IsAbs(dir) {
		return t.evalDir(dir)
	}
	pd, ok := t.resolveDir(parent)
	if !ok {
		return "", false
	}
	d := ""
	if pd != "" { // else its parent is not there: neither is it
		fi, err := os.Lstat(filepath.Join(pd, filepath.Base(dir)))
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink == 0:
			d = filepath.Join(pd, filepath.Base(dir))
		case err == nil: // a link: resolved whole, as EvalSymlinks does
			if t.links == nil {
				t.links = map[string]bool{}
			}
			t.links[dir] = true
			return t.evalDir(dir)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return "", false
		}
	}
	t.dirs[dir] = d
	return d, true
}

func (t *taker) evalDir(dir string) (string, bool) {
	d, err := filepath.EvalSymlinks(dir)
	switch {
	case err == nil:
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return "", false
	default:
		d = ""
	}
	t.dirs[dir] = d
	return d, true
}

var errTooBig = errors.New("too large")

// readRegular reads a regular file (through links, as git does) of at most max bytes. A
// fifo or device planted where a file should be is refused, never opened blocking.
func readRegular(p string, max int64) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, p, max)
}

// readOpen reads the regular file f (named p) up to max bytes.
func readOpen(f *os.File, p string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, errTooBig
	}
	return buf.Bytes(), nil
}

// writable reports whether p lies in one of the snapshot's writable roots.
func (s *Snapshot) writable(p string) bool {
	return slices.ContainsFunc(s.Writable, func(root string) bool { return within(p, root) })
}

func within(p, dir string) bool {
	if p == dir {
		return true
	}
	// p has dir (without a trailing slash) and a slash as its prefix, compared in
	// place: a concatenation here allocated once per call, thousands of calls a run.
	d := strings.TrimSuffix(dir, "/")
	return len(p) > len(d) && p[len(d)] == '/' && p[:len(d)] == d
}
