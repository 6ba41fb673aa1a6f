package protect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/heavy-duty/box/backend/bwrap/dirlist"
	"golang.org/x/sys/unix"
)

// The scan's bound: it reads at most MaxDirs directories, breadth-first, no deeper than
// MaxDepth levels below the working directory. Past it, the launch goes on with what was
// found (and a warning): the repositories nearest the top are protected, the post-run
// audit checks the rest.
const (
	MaxDirs  = 4096
	MaxDepth = 10
)

// skipDirs are not descended into: tool-managed trees, huge, where no repository the
// operator works in lives (npm strips .git from git dependencies).
var skipDirs = map[string]bool{"node_modules": true}

// The bound in force (tests lower it).
var scanDirs, scanDepth = MaxDirs, MaxDepth

// maxModuleDepth bounds the walk of .git/modules (submodule names may hold slashes).
const maxModuleDepth = 6

// Scan learns the facts Build needs about workdir (absolute, symlinks resolved): it reads
// directories looking only for .git entries, follows what they name, and lstats every
// candidate path. It never follows a symbolic link while walking. refuse lists
// directories (box's own, the home's secret locations) a git directory outside the
// working directory must neither be nor hold, or it is not bound.
func Scan(workdir, home string, o Options, refuse []string) Tree {
	return ScanAfter(nil, workdir, home, o, refuse)
}

// ScanAfter is Scan reusing prev's listings (an earlier walk's of the tree: the last
// run's, dirlist.Load) of the directories unchanged since, and keeping prev as the base
// of the listings it gives the audit (Tree.Listings).
func ScanAfter(prev *dirlist.Cache, workdir, home string, o Options, refuse []string) Tree {
	t := Tree{Workdir: workdir, Tops: []string{workdir}, Exists: map[string]FileKind{}}
	gitdirs := map[string]bool{}
	addGitDir := func(g string, linked bool) {
		if !gitdirs[g] {
			gitdirs[g] = true
			t.GitDirs = append(t.GitDirs, GitDirFact{Path: g, Linked: linked})
		}
	}
	var dotgits []string   // .git entries found, in walk order
	var envrcDirs []string // directories holding an .envrc, in walk order
	var yarnDirs []string  // directories holding a yarn rc, in walk order
	var miseFiles []miseFile
	// The listings of the directories holding a .git entry (the tops), where most of the
	// protected set's candidates are: looked up, not lstatted one by one.
	listings := map[string]map[string]FileKind{}
	type item struct {
		dir   string
		depth int
	}
	buf := make([]byte, 32<<10) // getdents' buffer, reused for every directory
	t.Listings = dirlist.New(prev)
	stop := t.Listings.Ahead(prev) // the reused listings' stamps, on another thread
	var kept []dirlist.Ent
	var reused []dirent
	queue := []item{{workdir, 0}}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		if t.Dirs >= scanDirs {
			t.Truncated = true
			break
		}
		var ents []dirent
		if l, ok := prev.Reuse(it.dir, t.Listings); ok {
			reused = reused[:0]
			for _, e := range l {
				reused = append(reused, direntOf(e))
			}
			ents = reused
			t.Dirs++
		} else {
			var st dirlist.Stamp
			var err error
			ents, st, err = readDirStamped(it.dir, buf, t.Listings)
			t.Dirs++
			if err != nil {
				continue
			}
			kept = kept[:0]
			for _, e := range ents {
				kept = append(kept, dirlist.Ent{Name: e.name, Type: e.dtype()})
			}
			t.Listings.Put(it.dir, st, kept)
		}
		if it.dir == workdir {
			listings[workdir] = kindsOf(ents)
		}
		for _, e := range ents {
			p := joinEntry(it.dir, e.name, it.depth)
			if e.name == ".envrc" {
				envrcDirs = append(envrcDirs, it.dir)
			}
			if (e.name == ".yarnrc.yml" || e.name == ".yarnrc" || e.name == "pnpm-workspace.yaml" || e.name == ".npmrc") && (len(yarnDirs) == 0 || yarnDirs[len(yarnDirs)-1] != it.dir) {
				yarnDirs = append(yarnDirs, it.dir)
			}
			if root, ok := miseConfigAt(it.dir, e.name); ok && !e.dir {
				miseFiles = append(miseFiles, miseFile{p, root})
			}
			if e.name == ".git" {
				dotgits = append(dotgits, p)
				if it.dir != workdir {
					t.Tops = append(t.Tops, it.dir)
				}
				listings[it.dir] = kindsOf(ents)
				continue
			}
			if e.dir && !skipDirs[e.name] {
				if it.depth+1 > scanDepth {
					t.Truncated = true
					continue
				}
				queue = append(queue, item{p, it.depth + 1})
			}
		}
	}
	stop()

	globalHP := globalHooksPath(home)
	// An absolute global core.hooksPath (~/dotfiles/githooks) holds the hooks of every
	// repository of yours on the host, whatever the working directory's own repositories
	// set (or whether it holds one).
	if filepath.IsAbs(globalHP) || strings.HasPrefix(globalHP, "~/") {
		if h := resolveHooksPath(globalHP, "", home); within(h, workdir) && h != workdir {
			t.HooksPaths = append(t.HooksPaths, h)
		}
	}
	hr := newHookReader()
	inside := true // a repository the sandbox commits in (not a nested clone, not the containing one)
	hooksPath := func(common, top string) {
		hp, incs := readGitConfig(filepath.Join(common, "config"), home)
		global := hp == ""
		if global {
			hp = globalHP // a relative one names a directory in every work tree
		}
		h := resolveHooksPath(hp, top, home)
		in := h != "" && within(h, workdir) && h != workdir
		if in && !slices.Contains(t.HooksPaths, h) {
			t.HooksPaths = append(t.HooksPaths, h)
		}
		// Inside, git reads no global config of yours (its home is the sandbox's), and
		// a directory outside the working directory is not there.
		if f := (HooksFact{Top: top, Dir: h, Global: global}); h != "" && inside && (global || !in) && !slices.Contains(t.HooksOutside, f) {
			t.HooksOutside = append(t.HooksOutside, f)
		}
		// The hooks git runs inside: the repository's own core.hooksPath in the working
		// directory, else its git directory's hooks/ (no global config inside).
		if hooks := map[bool]string{true: filepath.Join(common, "hooks"), false: h}[global]; inside && (global || in) {
			hr.hookTools(top, hooks, workdir, home, func(f HookToolFact) {
				switch {
				case len(t.HookTools) == maxHookToolFacts:
					t.HookToolsMore++ // a work tree is visited once: no fact twice
				case !slices.Contains(t.HookTools, f):
					t.HookTools = append(t.HookTools, f)
				}
			})
		}
		for _, inc := range incs {
			if within(inc, workdir) && inc != workdir && !slices.Contains(t.Includes, inc) {
				t.Includes = append(t.Includes, inc)
			}
		}
	}
	for _, dg := range dotgits {
		fi, err := os.Lstat(dg)
		if err != nil {
			continue
		}
		top := filepath.Dir(dg)
		switch {
		case fi.IsDir() && top == workdir:
			addGitDir(dg, false)
			expand(dg, addGitDir, buf)
			hooksPath(dg, top)
		case fi.IsDir():
			t.Nested = append(t.Nested, dg)
			inside = false // a nested clone's .git is read-only inside: no commits there
			hooksPath(dg, top)
			inside = true
		case fi.Mode().IsRegular():
			t.Pointers = append(t.Pointers, dg)
			g, err := readPointer(dg)
			if err != nil {
				t.Notes = append(t.Notes, fmt.Sprintf("%s: %v; its git directory is not protected", dg, err))
				continue
			}
			if within(g, workdir) {
				linked := filepath.Base(filepath.Dir(g)) == "worktrees"
				addGitDir(g, linked)
				if !linked {
					expand(g, addGitDir, buf)
					hooksPath(g, top)
				} else {
					hooksPath(filepath.Dir(filepath.Dir(g)), top)
				}
				continue
			}
			if filepath.Dir(dg) != workdir {
				continue // a nested worktree's git directory outside: not visible inside
			}
			c, linked, why := outsideGitDir(dg, g, home, refuse)
			if why != "" {
				t.Notes = append(t.Notes, fmt.Sprintf("the working directory's .git names %s, which is not bound (%s): git commands inside will fail", g, why))
				continue
			}
			t.Binds = append(t.Binds, c)
			if linked {
				addGitDir(g, true)
			}
			addGitDir(c, false)
			expand(c, addGitDir, buf)
			hooksPath(c, top)
		default:
			t.Notes = append(t.Notes, fmt.Sprintf("%s is a %s: not followed (box never binds through a link)", dg, kindOf(fi)))
		}
	}
	if len(dotgits) == 0 || filepath.Dir(dotgits[0]) != workdir {
		if top := containingRepo(workdir, home); top != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("the working directory lies inside the repository %s, whose .git is not visible inside: git will not find it there (run box from %s to commit inside)", top, top))
			// Its git is the host's, run while the sandbox runs: a core.hooksPath or
			// an include it names inside the working directory is protected too.
			if common := commonOf(filepath.Join(top, ".git")); common != "" {
				inside = false
				hooksPath(common, top)
			}
		}
	}
	if hr.long > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d git hooks were read only in their first %d bytes for tools at paths the sandbox hides: a tool one calls past that is not warned of", hr.long, maxHookBytes))
	}
	if hr.unread > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d git hooks past the %d bytes box reads of them (or unreadable) were not read for tools at paths the sandbox hides: a hook among them that fails inside is not warned of", hr.unread, maxHookTotal))
	}
	for i, g := range t.GitDirs {
		common := g.Path
		if g.Linked {
			common = filepath.Dir(filepath.Dir(g.Path))
		}
		t.GitDirs[i].WorktreeConfig = mentionsWorktreeConfig(filepath.Join(common, "config"))
	}
	var notes []string
	t.EnvrcSources, notes = envrcSources(envrcDirs, workdir)
	t.Notes = append(t.Notes, notes...)
	t.YarnSources, notes = yarnSources(yarnDirs, workdir)
	t.Notes = append(t.Notes, notes...)
	t.MiseSources, notes = miseSources(miseFiles, workdir)
	t.Notes = append(t.Notes, notes...)
	t.HomeLinks, notes = homeLinks(home, workdir, o.Path)
	t.Notes = append(t.Notes, notes...)
	t.HookLinks = hookLinks(t, workdir)
	cands := t.candidates(o)
	t.Exists = existing(candidatePaths(cands), listings, buf)
	t.scanned = &scannedCandidates{add: slices.Clone(o.Add), drop: slices.Clone(o.Drop), exists: t.Exists, list: cands}
	return t
}

// existing is lstat's answer for each of paths (sorted, so a path's parent, when it is
// a candidate too, comes before it), by as few system calls as that answer takes: a path
// under an absent parent, or under a file, is absent; one in a directory listed (the
// walk's, or listed here when it holds several candidates) is looked up in the listing.
// A parent that is a link, or that cannot be listed, leaves its paths to lstat, which
// follows the link as before.
func existing(paths []string, listings map[string]map[string]FileKind, buf []byte) map[string]FileKind {
	out := make(map[string]FileKind, len(paths))
	siblings := map[string]int{}
	for _, p := range paths {
		siblings[filepath.Dir(p)]++
	}
	isCandidate := make(map[string]bool, len(paths))
	for _, p := range paths {
		isCandidate[p] = true
	}
	for _, p := range paths {
		d := filepath.Dir(p)
		if isCandidate[d] {
			k, found := out[d]
			if !found || k == File || k == Other {
				continue // ENOENT or ENOTDIR: absent
			}
			if k == Link {
				if fi, err := os.Lstat(p); err == nil {
					out[p] = kindOf(fi)
				}
				continue
			}
		}
		l, listed := listings[d]
		if !listed && siblings[d] >= 3 {
			if ents, err := readDir(d, buf); err == nil {
				l = kindsOf(ents)
			} else if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				l = map[string]FileKind{}
			}
			listed = l != nil
			listings[d] = l // nil: not listable (a link, refused); lstat below
		}
		if listed && l != nil {
			if k, ok := l[filepath.Base(p)]; ok {
				out[p] = k
			}
			continue
		}
		if fi, err := os.Lstat(p); err == nil {
			out[p] = kindOf(fi)
		}
	}
	return out
}

func kindsOf(ents []dirent) map[string]FileKind {
	m := make(map[string]FileKind, len(ents))
	for _, e := range ents {
		if e.kind == "" {
			return nil // an entry lstat may not see: lstat decides, path by path
		}
		m[e.name] = e.kind
	}
	return m
}

type dirent struct {
	name string
	dir  bool     // a real directory (never a symlink to one)
	link bool     // a symbolic link
	kind FileKind // what lstat would say ("" when fstatat could not say)
}

// dtype is e's type for a kept listing (dirlist.Ent): DT_DIR exactly when the walk
// would enter it.
func (e dirent) dtype() uint8 {
	switch {
	case e.dir:
		return unix.DT_DIR
	case e.link:
		return unix.DT_LNK
	case e.kind == File:
		return unix.DT_REG
	}
	return unix.DT_UNKNOWN
}

// direntOf is a kept listing's entry as readDir gives it (dtype's inverse): an entry
// whose type was not known is for lstat to judge (kind ""), never entered.
func direntOf(e dirlist.Ent) dirent {
	if e.Type == unix.DT_UNKNOWN {
		return dirent{name: e.Name}
	}
	k := kindOfType(e.Type)
	return dirent{e.Name, k == Dir, k == Link, k}
}

// readDir lists a directory in the order the kernel gives, with the types getdents
// reports: open, getdents, close, nothing per entry (os.ReadDir would stat and sort).
func readDir(dir string, buf []byte) ([]dirent, error) {
	ents, _, err := readDirStamped(dir, buf, nil)
	return ents, err
}

// readDirStamped is readDir, with the directory's stamp taken before it is read, for
// c (nil: none).
func readDirStamped(dir string, buf []byte, c *dirlist.Cache) ([]dirent, dirlist.Stamp, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, dirlist.Stamp{}, err
	}
	defer unix.Close(fd)
	st := c.Stat(fd)
	ents, err := readOpenDir(fd, buf)
	return ents, st, err
}

func readOpenDir(fd int, buf []byte) ([]dirent, error) {
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if nm := string(name); nm != "." && nm != ".." {
				kind := kindOfType(typ)
				if typ == unix.DT_UNKNOWN { // filesystems that do not say: ask
					var st unix.Stat_t
					kind = "" // unknown: listed, but what lstat would say is not known
					if unix.Fstatat(fd, nm, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
						kind = kindOfType(uint8(st.Mode & unix.S_IFMT >> 12))
					}
				}
				out = append(out, dirent{nm, kind == Dir, kind == Link, kind})
			}
			b = b[reclen:]
		}
	}
}

// kindOfType is the kind of a getdents type (DT_*, which is S_IFMT>>12).
func kindOfType(typ uint8) FileKind {
	switch typ {
	case unix.DT_REG:
		return File
	case unix.DT_DIR:
		return Dir
	case unix.DT_LNK:
		return Link
	}
	return Other
}

func kindOf(fi os.FileInfo) FileKind {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return File
	case m.IsDir():
		return Dir
	case m&os.ModeSymlink != 0:
		return Link
	}
	return Other
}

// expand adds the git directories under g: .git/modules/* (submodules; a directory with a
// HEAD is one, names may hold slashes) and .git/worktrees/* (linked worktrees), and
// theirs in turn (a submodule's own submodules, a worktree's submodules).
func expand(g string, add func(string, bool), buf []byte) {
	expandModules(filepath.Join(g, "modules"), 0, add, buf)
	if ws, err := readDir(filepath.Join(g, "worktrees"), buf); err == nil {
		for _, w := range ws {
			if w.dir {
				wt := filepath.Join(g, "worktrees", w.name)
				add(wt, true)
				expandModules(filepath.Join(wt, "modules"), 0, add, buf)
			}
		}
	}
}

func expandModules(dir string, depth int, add func(string, bool), buf []byte) {
	if depth > maxModuleDepth {
		return
	}
	ents, err := readDir(dir, buf)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.dir {
			continue
		}
		p := filepath.Join(dir, e.name)
		if fi, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil && fi.Mode().IsRegular() {
			add(p, false)
			expand(p, add, buf)
		} else {
			expandModules(p, depth+1, add, buf)
		}
	}
}

// readConfig reads a git config file (never through a link, at most 1 MiB).
func readConfig(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// mentionsWorktreeConfig: the config may enable extensions.worktreeConfig (a plain
// case-insensitive search: a false yes only costs a placeholder). Unreadable counts as yes.
func mentionsWorktreeConfig(config string) bool {
	b, err := readConfig(config)
	if os.IsNotExist(err) {
		return false
	}
	return err != nil || bytes.Contains(bytes.ToLower(b), []byte("worktreeconfig"))
}

// hooksPathOf is the directory core.hooksPath names in config (the last one wins;
// relative to the work tree's top, ~/ to home), "" if none.
func hooksPathOf(config, top, home string) string {
	val, _ := readGitConfig(config, home)
	return resolveHooksPath(val, top, home)
}

// globalHooksPath is the core.hooksPath of your global git config (raw; ~/.gitconfig,
// read after ~/.config/git/config, wins, as in git), "" if none. Relative, it names a
// directory in every repository's work tree (core.hooksPath = .githooks).
func globalHooksPath(home string) string {
	hp := ""
	for _, g := range []string{filepath.Join(home, ".config", "git", "config"), filepath.Join(home, ".gitconfig")} {
		if r, err := filepath.EvalSymlinks(g); err == nil {
			if v, _ := readGitConfig(r, home); v != "" {
				hp = v
			}
		}
	}
	return hp
}

func resolveHooksPath(val, top, home string) string {
	switch {
	case val == "":
		return ""
	case strings.HasPrefix(val, "~/"):
		return filepath.Join(home, val[2:])
	case filepath.IsAbs(val):
		return filepath.Clean(val)
	}
	return filepath.Join(top, val)
}

// maxIncludes is git's own include depth limit.
const maxIncludes = 10

// readGitConfig reads what the protected set needs from a config file and the files it
// includes (include.path and includeIf.*.path, whatever the condition, followed in
// place up to git's depth): the last core.hooksPath (raw) and every included file
// (absolute: relative to the including file's directory, ~/ to home). A plain reading:
// the post-run audit reads configs with all of git's rules.
func readGitConfig(config, home string) (hooksPath string, includes []string) {
	hooksPath, includes, _ = readGitConfigAll(config, home)
	return hooksPath, includes
}

// readGitConfigAll is readGitConfig with the last init.templateDir too (raw): git init
// and git clone copy that directory's hooks into every repository they make.
func readGitConfigAll(config, home string) (hooksPath string, includes []string, templateDir string) {
	seen := map[string]bool{}
	var read func(file string, depth int)
	read = func(file string, depth int) {
		if depth > maxIncludes || seen[file] {
			return
		}
		seen[file] = true
		b, _ := readConfig(file)
		section := ""
		for _, line := range strings.Split(string(b), "\n") {
			l := strings.TrimSpace(line)
			if strings.HasPrefix(l, "[") {
				h, rest, _ := strings.Cut(l[1:], "]")
				section, l = strings.ToLower(strings.TrimSpace(h)), strings.TrimSpace(rest)
			}
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				continue
			}
			k = strings.ToLower(strings.TrimSpace(k))
			switch {
			case section == "core" && k == "hookspath":
				hooksPath = gitValue(v)
			case section == "init" && k == "templatedir":
				templateDir = gitValue(v)
			case (section == "include" || strings.HasPrefix(section, "includeif")) && k == "path":
				inc := gitValue(v)
				switch {
				case inc == "":
					continue
				case strings.HasPrefix(inc, "~/"):
					inc = filepath.Join(home, inc[2:])
				case !filepath.IsAbs(inc):
					inc = filepath.Join(filepath.Dir(file), inc)
				}
				inc = filepath.Clean(inc)
				includes = append(includes, inc)
				read(inc, depth+1)
			}
		}
	}
	read(config, 0)
	return hooksPath, includes, templateDir
}

// gitValue reads a config value as git does: quotes removed, a # or ; outside them
// starts a comment, backslash escapes, surrounding blanks trimmed.
func gitValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			if e, ok := gitEscapes[v[i]]; ok {
				b.WriteByte(e)
			} else {
				b.WriteByte(v[i]) // git refuses an unknown escape; the character is kept
			}
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

var gitEscapes = map[byte]byte{'n': '\n', 't': '\t', 'b': '\b', '"': '"', '\\': '\\'}

// maxPointer bounds what box reads of a .git file, commondir or gitdir file.
const maxPointer = 4096

// readSmall reads a regular file (never through a link, never a fifo) of at most
// maxPointer bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPointer+1))
	if err == nil && len(b) > maxPointer {
		err = fmt.Errorf("longer than %d bytes", maxPointer)
	}
	return b, err
}

// readPath reads a one-line path file (gitdir:, commondir, gitdir) and resolves it
// against base.
func readPath(path, prefix, base string) (string, error) {
	b, err := readSmall(path)
	if err != nil {
		return "", err
	}
	line := string(bytes.TrimSpace(bytes.SplitN(b, []byte("\n"), 2)[0]))
	line, ok := strings.CutPrefix(line, prefix)
	line = strings.TrimSpace(line)
	if !ok || line == "" {
		return "", fmt.Errorf("no %q line", prefix+"PATH")
	}
	if !filepath.IsAbs(line) {
		line = filepath.Join(base, line)
	}
	return filepath.Clean(line), nil
}

// commonOf is the common git directory of the repository whose .git entry is dotgit (a
// directory, or a file naming a worktree's or submodule's git directory); "" when it
// names none.
func commonOf(dotgit string) string {
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return dotgit
	case !fi.Mode().IsRegular():
		return ""
	}
	g, err := readPointer(dotgit)
	if err != nil {
		return ""
	}
	if c, err := readPath(filepath.Join(g, "commondir"), "", g); err == nil {
		return c
	}
	return g
}

func readPointer(dotgit string) (string, error) {
	return readPath(dotgit, "gitdir:", filepath.Dir(dotgit))
}

// outsideGitDir decides whether the working directory's own .git file names a git
// directory box may bind read-write, and returns the directory to bind (the common
// directory) and whether g is a linked worktree's. A .git file is text the sandbox could
// have written in an earlier run, so box binds only what proves it belongs: a linked
// worktree whose gitdir back-link names this very .git file, or a submodule's git
// directory inside a superproject's .git/modules. Never a directory box refuses.
func outsideGitDir(dotgit, g, home string, refuse []string) (string, bool, string) {
	rg, err := filepath.EvalSymlinks(g)
	if err != nil {
		return "", false, "it does not exist"
	}
	if fi, err := os.Stat(filepath.Join(rg, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return "", false, "it is not a git directory"
	}
	c, linked := rg, false
	if _, err := os.Lstat(filepath.Join(rg, "commondir")); err == nil {
		cd, err := readPath(filepath.Join(rg, "commondir"), "", rg)
		if err != nil {
			return "", false, "its commondir: " + err.Error()
		}
		if c, err = filepath.EvalSymlinks(cd); err != nil {
			return "", false, "its common directory does not exist"
		}
		back, err := readPath(filepath.Join(rg, "gitdir"), "", rg)
		if err != nil || back != dotgit {
			return "", false, "its gitdir back-link does not name this working directory"
		}
		if filepath.Dir(rg) != filepath.Join(c, "worktrees") {
			return "", false, "it is not a worktree of its common directory"
		}
		linked = true
	} else if !strings.Contains(rg, "/.git/modules/") {
		return "", false, "it is neither a linked worktree's nor a submodule's"
	}
	if within(home, c) {
		return "", false, "it holds your home directory"
	}
	for _, r := range refuse {
		if within(c, r) || within(r, c) {
			return "", false, "it holds or lies in " + r
		}
	}
	return c, linked, ""
}

// containingRepo is the top of the repository whose work tree holds dir, "" if none
// (looking no higher than the home directory's parent).
func containingRepo(dir, home string) string {
	for d := filepath.Dir(dir); d != "/" && d != filepath.Dir(home); d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
	}
	return ""
}

// linkTarget is where the link p leads, links resolved; for a dangling link (a dotfile
// sourced only if it exists, ~/.bashrc.local), where it would lead once created.
func linkTarget(p string) string {
	if t, err := filepath.EvalSymlinks(p); err == nil {
		return t
	}
	t, err := os.Readlink(p)
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(p), t)
	}
	return missingPath(t)
}

// missingPath is p, absent, as the kernel would reach it once made: its nearest existing
// ancestor with links resolved, and the rest of p below it. A dangling link's or a
// missing include's directory may be missing too (~/.bashrc.local naming
// dotfiles/private/bashrc.local): the sandbox can make both, and the host then reads it.
func missingPath(p string) string {
	if DisableMissingDirs { // as before: only a missing last part
		if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(d, filepath.Base(p))
		}
		return ""
	}
	for rest := filepath.Base(p); ; rest = filepath.Join(filepath.Base(p), rest) {
		if p = filepath.Dir(p); p == filepath.Dir(p) {
			return ""
		}
		if d, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(d, rest)
		}
	}
}

// hookLinks are the targets in the working directory of the links among the hooks git
// runs: each main git directory's hooks/ and each core.hooksPath directory. The hooks
// directory is read-only inside; a script it links to in the tree would not be.
func hookLinks(t Tree, workdir string) []string {
	var dirs []string
	for _, g := range t.GitDirs {
		if !g.Linked {
			dirs = append(dirs, filepath.Join(g.Path, "hooks"))
		}
	}
	dirs = append(dirs, t.HooksPaths...)
	var out []string
	buf := make([]byte, 32<<10)
	for _, d := range dirs {
		ents, _ := readDir(d, buf)
		for i, e := range ents {
			if i >= maxHookEntries {
				break
			}
			if !e.link {
				continue
			}
			if tg := linkTarget(filepath.Join(d, e.name)); tg != "" && tg != workdir && within(tg, workdir) && !slices.Contains(out, tg) {
				out = append(out, tg)
			}
		}
	}
	return out
}

// maxHookEntries bounds what box lists of one hooks directory (git knows some thirty
// hook names).
const maxHookEntries = 512

// homeDirs are where the host's tools find configuration and programs by a fixed name
// (the home's dotfiles, ~/.config/NAME and one level below it: ~/.config/fish/config.fish,
// ~/.config/autostart/*.desktop, ~/.config/systemd/user; ~/.local/bin on PATH), relative
// to the home, with how many levels of real directories below each are listed too.
// The home's own dot-directories are listed one level down besides (dotDirDepth).
var homeDirs = []struct {
	dir   string
	depth int
}{{".", 0}, {".config", 2}, {".local/bin", 0}}

// dotDirDepth: the home's dot-directories (~/.ssh, ~/.aws, ~/.gnupg, ~/.vim) are
// listed this many levels down, for the links stow makes a file at a time where the
// directory exists already (~/.ssh/config -> ../dotfiles/ssh/config: ssh runs its Match
// exec and ProxyCommand lines); ~/bin too, which many PATHs hold. A hostile review
// (session 18) planted a Match exec line in a dotfiles repository's ssh/config so.
const dotDirDepth = 1

// DisableDotDirs and DisableMissingDirs switch off the listing of the home's
// dot-directories and the watch of a link's or include's target whose directory does
// not exist yet (a test build's switches, to show the drill's protect:home-dotdir-link
// and protect:home-missing-link rows catch their absence).
var DisableDotDirs, DisableMissingDirs bool

// maxHomeEntries bounds the entries homeLinks looks at in all: past it the rest is not
// looked at, and the launch says so.
const maxHomeEntries = 8192

// homeLinks are the paths, inside workdir (strictly), that the host reads as live
// configuration or runs: the targets of the symbolic links in homeDirs (a dotfiles
// repository's files, live through the links), the files your global git config
// includes and the template directory it names (init.templateDir, whose hooks git
// init and git clone copy into every repository they make). One listing per directory
// and a resolve per link, whatever the size of the tree. notes say what is not
// protected so: the working directory itself named so, a directory of path (your PATH)
// in it or a relative one, a home too large to look at whole.
func homeLinks(home, workdir string, path []string) (out, notes []string) {
	add := func(t string) {
		if t != workdir && within(t, workdir) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	whole := map[string]bool{} // what names the working directory itself
	// where resolves p (links followed, as the host's tools follow them; a path not
	// there yet as it will be reached once made) and adds it.
	where := func(p, what string) {
		t, err := filepath.EvalSymlinks(p)
		if err != nil {
			if t = linkTarget(p); t == "" {
				t = missingPath(p)
			}
		}
		if t == workdir && !whole[what] {
			whole[what] = true
			notes = append(notes, fmt.Sprintf("%s is the working directory itself: what the sandbox writes here your host then reads or runs, and box cannot make the whole working directory read-only (run box in a subdirectory of it)", what))
		}
		if t != "" {
			add(t)
		}
	}
	if home != "" {
		// Breadth-first, so a big tree deep in ~/.config cannot starve the top levels
		// of the bound.
		type item struct {
			dir   string
			depth int
		}
		var queue []item
		for _, d := range homeDirs {
			queue = append(queue, item{filepath.Join(home, d.dir), d.depth})
		}
		buf := make([]byte, 32<<10)
		n := 0
		for len(queue) > 0 && n <= maxHomeEntries {
			it := queue[0]
			queue = queue[1:]
			ents, _ := readDir(it.dir, buf)
			for _, e := range ents {
				if n++; n > maxHomeEntries {
					break
				}
				p := filepath.Join(it.dir, e.name)
				if e.dir {
					switch {
					case it.depth > 0:
						queue = append(queue, item{p, it.depth - 1})
					case it.dir == home && !DisableDotDirs && (strings.HasPrefix(e.name, ".") && e.name != ".config" && e.name != ".local" || e.name == "bin"):
						queue = append(queue, item{p, dotDirDepth - 1})
					}
					continue
				}
				if !e.link {
					continue // getdents says what it is: no stat per file
				}
				if t := linkTarget(p); t != "" {
					// A plain shortcut at the home's top (~/proj) is no configuration:
					// only a dotfile, or one in the directories listed, is read as one.
					if rel := strings.TrimPrefix(p, home+"/"); t == workdir && (strings.HasPrefix(rel, ".") || strings.Contains(rel, "/")) {
						where(p, "~/"+rel+" (a link)")
					}
					add(t)
				}
			}
		}
		if n > maxHomeEntries {
			notes = append(notes, fmt.Sprintf("your home holds more than %d entries where box looks for links into the working directory (the home, its dot-directories, ~/.config, ~/.local/bin): past them a link to a file here is not protected", maxHomeEntries))
		}
		for _, g := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
			// The operator's own file: followed through a link (a dotfiles repository's),
			// as git does.
			if r, err := filepath.EvalSymlinks(g); err == nil {
				g = r
			}
			_, incs, tmpl := readGitConfigAll(g, home)
			for _, inc := range incs {
				// git skips a missing include: the sandbox can make it (and its directory).
				where(inc, "a file your global git config includes")
			}
			if tmpl = resolveHooksPath(tmpl, "", home); filepath.IsAbs(tmpl) {
				where(tmpl, "your global git config's init.templateDir")
			}
		}
	}
	// A directory of your PATH in the tree is said, not protected: builds and installs
	// write there (direnv's PATH_add bin, layout node's node_modules/.bin), and a
	// read-only one would break them.
	for _, d := range path {
		if !filepath.IsAbs(d) {
			// "" and "." are the directory the shell is in: the working directory, when
			// you are in it after the run.
			notes = append(notes, fmt.Sprintf("your PATH holds the relative entry %q: a program the sandbox writes in the working directory (or below it) is what your shell runs there by that name", d))
			continue
		}
		t, err := filepath.EvalSymlinks(d)
		if err != nil {
			t = missingPath(filepath.Clean(d))
		}
		if t != "" && within(t, workdir) {
			notes = append(notes, fmt.Sprintf("your PATH holds %s, in the working directory: a program the sandbox writes there is what your shell runs by that name (box leaves it writable, as builds and installs write there: look at it after the run, or start box from a shell without it on PATH)", d))
		}
	}
	slices.Sort(out)
	return out, notes
}

// envrcSources lists the files in the working directory that the .envrc in each of dirs
// (every one the walk found: direnv obeys one wherever you cd) has direnv load
// (EnvrcLoads): a directory source_env names stands for its .envrc. A file it names in
// a way box cannot resolve is a note.
//
// The .envrc files are the sandbox's to write (the audit reports a changed one, and
// direnv runs it only once you allow it again), so what they name is bounded: past
// maxEnvrcSources files, or maxEnvrcNotes unresolvable names, the rest is one note.
// Unbounded, a 1 MiB .envrc of dotenv lines in each of three directories (227,000
// names) held every launch for 147 s (hostile review, session 19).
func envrcSources(dirs []string, workdir string) (out, notes []string) {
	seen := map[string]bool{}
	skipped, unresolvedN, firstSkipped := 0, 0, ""
	for _, top := range dirs {
		envrc := filepath.Join(top, ".envrc")
		b, err := readConfig(envrc)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			// Unknown loads are said, never skipped (a link, which box does not follow;
			// one it may not read), within the notes' bound.
			if unresolvedN++; unresolvedN <= maxEnvrcNotes {
				notes = append(notes, fmt.Sprintf("%s cannot be read (%v): what it loads is not protected (protect_add it)", envrc, err))
			}
			continue
		}
		paths, unresolved := EnvrcLoads(b, top)
		for _, u := range unresolved {
			if unresolvedN++; unresolvedN <= maxEnvrcNotes {
				notes = append(notes, fmt.Sprintf("%s loads %q, which box cannot resolve: what it names is not protected (protect_add it)", envrc, u))
			}
		}
		for _, p := range paths {
			if len(out) == maxEnvrcSources {
				if skipped++; skipped == 1 {
					firstSkipped = envrc
				}
				continue
			}
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				p = filepath.Join(p, ".envrc")
			}
			if within(p, workdir) && p != workdir && p != envrc && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	if unresolvedN > maxEnvrcNotes {
		notes = append(notes, fmt.Sprintf("the .envrc files load %d more names box cannot resolve: what they name is not protected", unresolvedN-maxEnvrcNotes))
	}
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("the .envrc files name %d more files past the %d box protects, from %s on: those are not protected (an .envrc the sandbox wrote? the audit reports it; remove what you did not write, and look before you direnv allow)", skipped, maxEnvrcSources, firstSkipped))
	}
	return out, notes
}

// maxEnvrcSources and maxEnvrcNotes bound what envrcSources takes from the .envrc
// files: a project's own load a handful.
const maxEnvrcSources, maxEnvrcNotes = 256, 16

// joinEntry is filepath.Join(dir, name) for the entry name of the scan's directory dir
// at depth, without cleaning again what is clean: below the root (as given) dir is a
// join's result, and a listed name is one element. Thousands of entries a scan.
func joinEntry(dir, name string, depth int) string {
	if depth == 0 || dir == "/" || name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return filepath.Join(dir, name)
	}
	return dir + "/" + name
}
