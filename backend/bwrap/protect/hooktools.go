package protect

// The tools the hooks git runs inside call by a path the sandbox hides (field review,
// session 21): a pre-commit hook that runs ~/.local/bin/ruff, or the pre-commit
// framework's, whose INSTALL_PYTHON lies in a pipx venv under the home, failed inside
// every commit with no word at launch. Found cheaply: the hooks git runs at commit and
// push, executable, their first 64 KiB, the absolute paths written in them (the
// shebang's interpreter too, and ~/, $HOME/, ${HOME}/ spelled out) that are, on the
// host, executable files under a directory the sandbox does not show. Resolve drops
// those a profile's mount brings in.

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// HookToolFact is a tool a hook git runs inside calls by a path the sandbox may hide.
type HookToolFact struct {
	Top  string // the repository's work tree
	Hook string // the hook's file
	Tool string // the path the hook names (home spelled out)
	Real string // Tool, links followed, when that differs and is hidden too ("" else)
	// Framework: the hook is the pre-commit framework's and Tool its INSTALL_PYTHON; it
	// falls back to a pre-commit on PATH, and none is in the sandbox's system bin dirs.
	Framework bool
}

// hookNames are the hooks git runs at commit, merge, rebase and push.
var hookNames = []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-merge-commit", "pre-rebase", "post-rewrite", "pre-push"}

// hiddenRoots are directories the sandbox does not show (besides the home outside the
// working directory): a path under one is absent inside.
var hiddenRoots = []string{"/home", "/root", "/var", "/opt", "/srv", "/mnt", "/media"}

// systemBinDirs are the sandbox's PATH entries from the host's system.
var systemBinDirs = []string{"/usr/local/bin", "/usr/bin", "/bin"}

// maxHookBytes is how much of a hook is read; maxHookTotal, how much of all the hooks
// one launch reads (each file once): the hooks are the tree's to write, and their paths
// cost a stat each (hostile review, session 21: 200 work trees sharing a git directory
// whose hooks named 64 KiB of paths each took the launch many minutes).
const (
	maxHookBytes = 64 << 10
	maxHookTotal = 1 << 20
)

// maxHookToolFacts is how many hook tools one launch names (Tree.HookTools), each a
// warning; the rest are counted (Tree.HookToolsMore): a hook naming the hundreds of
// executables a host has under /var, in a git directory hundreds of work trees share,
// made a fact and a warning line of every pair (hostile review, session 21).
const maxHookToolFacts = 32

// hookReader reads the hooks of one scan: each file once (a git directory many work
// trees share, hard links), at most maxHookTotal bytes in all.
type hookReader struct {
	left   int
	seen   map[hookFile][]hookHit
	unread int // hooks git runs inside that were not read: past the budget, or unreadable
	long   int // hook files longer than maxHookBytes, read in part
}

type hookFile struct{ dev, ino uint64 }

// hookHit is what a hook file calls by a hidden path (HookToolFact without its place).
type hookHit struct {
	tool, real string
	framework  bool
}

func newHookReader() *hookReader {
	return &hookReader{left: maxHookTotal, seen: map[hookFile][]hookHit{}}
}

// hookTools gives emit the tools the hooks in dir (the hooks directory git runs inside
// for the repository at top) call by a hidden path, each once (a file's hits are
// distinct, and each hook is another).
func (hr *hookReader) hookTools(top, dir, workdir, home string, emit func(HookToolFact)) {
	for _, name := range hookNames {
		hook := filepath.Join(dir, name)
		fi, err := os.Stat(hook)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue // git runs only an executable hook
		}
		key := fileKeyOf(fi)
		hits, ok := hr.seen[key]
		if !ok {
			if hr.left <= 0 {
				hr.unread++
				continue
			}
			text, err := readHook(hook, fi)
			if err != nil {
				hr.unread++
				continue
			}
			hr.left -= max(len(text), 1)
			if fi.Size() > maxHookBytes {
				hr.long++
			}
			hits = hookHits(text, workdir, home)
			hr.seen[key] = hits
		}
		for _, h := range hits {
			emit(HookToolFact{Top: top, Hook: hook, Tool: h.tool, Real: h.real, Framework: h.framework})
		}
	}
}

func fileKeyOf(fi os.FileInfo) hookFile {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return hookFile{uint64(st.Dev), uint64(st.Ino)}
	}
	return hookFile{}
}

// readHook reads the first maxHookBytes of the hook at path, which os.Stat gave as fi:
// opened without waiting (a FIFO put in its place since) and read only when it is still
// that regular file.
func readHook(path string, fi os.FileInfo) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	now, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !now.Mode().IsRegular() || fileKeyOf(now) != fileKeyOf(fi) {
		return nil, errHookChanged
	}
	return io.ReadAll(io.LimitReader(f, maxHookBytes))
}

var errHookChanged = errors.New("the hook changed while it was read")

// hookHits are the tools a hook's text calls by a hidden path.
func hookHits(text []byte, workdir, home string) []hookHit {
	var out []hookHit
	installPython := ""
	if bytes.Contains(text, []byte("# File generated by pre-commit")) {
		installPython = frameworkPython(text, home)
	}
	for _, p := range pathsIn(text, home) {
		if !hiddenPath(p, workdir, home) || !executableFile(p) {
			continue
		}
		fw := p == installPython
		if fw && onSystemPath("pre-commit") {
			continue // the hook falls back to the sandbox's pre-commit
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if real == p || !hiddenPath(real, workdir, home) {
			real = "" // the link's target is in the sandbox (a system one): the link alone is missing
		}
		out = append(out, hookHit{p, real, fw})
	}
	return out
}

// frameworkPython is the INSTALL_PYTHON the pre-commit framework's hook names ("" when
// none).
func frameworkPython(text []byte, home string) string {
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "INSTALL_PYTHON="); ok {
			if ps := pathsIn([]byte("\n"+strings.Trim(v, `"'`)), home); len(ps) == 1 {
				return ps[0]
			}
		}
	}
	return ""
}

// pathsIn are the absolute paths text names outside comments (the shebang's interpreter
// included), ~/, $HOME/ and ${HOME}/ spelled out.
func pathsIn(text []byte, home string) []string {
	var out []string
	seen := map[string]bool{}
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if i == 0 && strings.HasPrefix(line, "#!") {
			line = strings.TrimSpace(line[2:])
		} else if strings.HasPrefix(line, "#") {
			continue
		}
		for _, tok := range strings.FieldsFunc(line, func(r rune) bool {
			return strings.ContainsRune(" \t\"'`=:;|&()<>,", r)
		}) {
			for _, pre := range []string{"~/", "$HOME/", "${HOME}/"} {
				if rest, ok := strings.CutPrefix(tok, pre); ok && home != "" {
					tok = filepath.Join(home, rest)
				}
			}
			if strings.HasPrefix(tok, "/") && !strings.ContainsAny(tok, "$*?[{") {
				if p := filepath.Clean(tok); !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// hiddenPath: p lies where the sandbox shows nothing of the host (a mount aside).
func hiddenPath(p, workdir, home string) bool {
	if within(p, workdir) {
		return false
	}
	if home != "" && within(p, home) {
		return !within(p, filepath.Join(home, ".claude"))
	}
	for _, r := range hiddenRoots {
		if within(p, r) {
			return true
		}
	}
	return false
}

// executableFile: p is, links followed, an executable regular file.
func executableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// onSystemPath: an executable name is in the sandbox's system bin dirs.
func onSystemPath(name string) bool {
	for _, d := range systemBinDirs {
		if executableFile(filepath.Join(d, name)) {
			return true
		}
	}
	return false
}
