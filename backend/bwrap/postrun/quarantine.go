package postrun

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/internal/termtext"
)

// Report is the audit's outcome: the findings, each neutralised (or not: Error), where
// their originals are kept, and whether the audit saw the whole tree.
type Report struct {
	Version int    `json:"version"`
	Time    string `json:"time"`
	Workdir string `json:"workdir"`
	// Quarantine is the directory holding the originals and manifest.json ("" when
	// there was nothing to keep).
	Quarantine string `json:"quarantine"`
	// Incomplete says which bound stopped a snapshot: what lies past it was not audited.
	Incomplete string `json:"incomplete"`
	// Beside says which findings were renamed aside in their own directory instead of
	// copied into the quarantine (past the audit's copy bound, or no room), and why.
	Beside   []string  `json:"beside"`
	Findings []Finding `json:"findings"`
}

// Failed reports whether a finding could not be neutralised (another audit of the same
// run may do better; an incomplete one would only be incomplete again).
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Error != "" })
}

// Err is why the audit failed, nil when every finding was neutralised and the whole tree
// was read. box exits non-zero on it (docs/bwrap.md).
func (r *Report) Err() error {
	var failed []string
	for _, f := range r.Findings {
		if f.Error != "" {
			failed = append(failed, f.Path)
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("post-run audit: could not neutralise %s: the host may still run what the sandbox left there", strings.Join(failed, ", "))
	case r.Incomplete != "":
		return fmt.Errorf("post-run audit incomplete: %s; what lies past that was not checked", r.Incomplete)
	}
	return nil
}

// Audit compares the snapshots (Diff), neutralises every finding and reports, with what
// either snapshot could not read.
func Audit(before, after *Snapshot, quarantine string, now time.Time) *Report {
	r := Neutralise(before, Diff(before, after), quarantine, now)
	if r.Incomplete = before.Incomplete; r.Incomplete == "" {
		r.Incomplete = after.Incomplete
	}
	if r.Quarantine != "" && r.Incomplete != "" {
		q := &quarantineDir{dir: r.Quarantine}
		q.manifest(r)
	}
	return r
}

// Neutralise moves every finding aside into a new directory under quarantine (made only
// when there is something to keep) and writes its manifest.json. Nothing is deleted: a
// config keeps its original copy and loses only the offending keys, a new repository or
// file is moved whole, a changed pointer or protected file is moved and the version from
// before the run put back when the snapshot kept it.
func Neutralise(before *Snapshot, findings []Finding, quarantine string, now time.Time) *Report {
	r := &Report{Version: 1, Time: now.UTC().Format(time.RFC3339), Workdir: before.Workdir, Findings: findings}
	if len(findings) == 0 {
		return r
	}
	q := &quarantineDir{base: quarantine, now: now, roots: before.Writable, limit: CopyLimit}
	// The modes granted to move things aside go back on what stays in place.
	defer q.acc.restore()
	// Config keys of one file are removed in one rewrite.
	byFile := map[string][]int{}
	for i, f := range r.Findings {
		if f.Kind == FindConfig {
			byFile[f.Path] = append(byFile[f.Path], i)
		}
	}
	done := map[string]bool{}
	for i := range r.Findings {
		f := &r.Findings[i]
		var err error
		switch f.Kind {
		case FindConfig:
			if done[f.Path] {
				continue
			}
			done[f.Path] = true
			err = q.config(r.Findings, byFile[f.Path])
		case FindRepo:
			err = q.repo(f, before)
		case FindPointer:
			err = q.moveRestore(f, []byte(f.pointer), 0o644, f.pointer != "")
		case FindFile:
			err = q.moveRestore(f, f.before.content, fs0(f.before.Mode), f.before.Kind == "file" && f.before.content != nil)
		case FindGitPointer:
			err = q.moveRestore(f, []byte(f.pointer), 0o644, f.pointer != "" && !strings.HasPrefix(f.pointer, "\x00"))
		case FindUnread:
			err = q.unread(f)
		case FindUnparsable:
			f.Action = "left in place: git refuses the file, so nothing in it runs"
			f.Restore = "fix the file by hand (git config --file " + shq(f.Path) + " --list shows the bad line)"
		}
		if err != nil {
			f.Error = err.Error()
			f.Action = "FAILED: " + err.Error()
			// A path box could not read or move: the modes (or the owner) that let the
			// next run finish. (A quarantine that cannot be made names itself.)
			if qe := (*quarantineError)(nil); denied(err) && !errors.As(err, &qe) {
				f.Fix = fixFor(f.Path)
			}
		}
	}
	r.Quarantine, r.Beside = q.dir, q.beside
	if q.dir != "" {
		if err := q.manifest(r); err != nil {
			for i := range r.Findings {
				if r.Findings[i].Error == "" {
					r.Findings[i].Error = "manifest: " + err.Error()
				}
			}
		}
	}
	return r
}

func fs0(m uint32) os.FileMode { return os.FileMode(m).Perm() }

type quarantineDir struct {
	base  string
	now   time.Time
	dir   string
	n     int
	roots []string // the writable roots: where box may grant itself modes
	acc   access
	// copied is what this audit copied across file systems so far (allocated bytes),
	// limit its bound (CopyLimit).
	copied, limit int64
	beside        []string // why findings were renamed in place instead of copied
}

// quarantineError: the quarantine directory itself could not be made.
type quarantineError struct{ err error }

func (e *quarantineError) Error() string { return "quarantine: " + e.err.Error() }
func (e *quarantineError) Unwrap() error { return e.err }

// CopyLimit bounds what one audit copies into the quarantine across file systems (the
// blocks the copy allocates; holes cost nothing). A finding past it is renamed aside in
// its own directory instead (see moveTree): nothing is lost, no disk is filled.
var CopyLimit int64 = 256 << 20

// fixFor is the one command that lets the next run finish the audit of p: the modes (or
// the owner) that let box read and move it.
func fixFor(p string) string {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) == nil && int(st.Uid) != os.Getuid() {
		return fmt.Sprintf("sudo chown -R %d:%d %s", os.Getuid(), os.Getgid(), shq(p))
	}
	return "chmod -R u+rwX " + shq(p)
}

// prepare makes p movable: its parent writable (and reachable), p itself writable when a
// directory (rename updates its "..").
func (q *quarantineDir) prepare(p string) {
	for _, r := range q.roots {
		if within(p, r) && p != r {
			q.acc.reach(r, p)
			q.acc.grant(filepath.Dir(p), 0o300)
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				q.acc.grant(p, 0o700)
			}
			return
		}
	}
}

// slot is a fresh path in the quarantine for something named name.
func (q *quarantineDir) slot(name string) (string, error) {
	if q.dir == "" {
		b := make([]byte, 3)
		rand.Read(b)
		d := filepath.Join(q.base, q.now.UTC().Format("20060102T150405Z")+"-"+hex.EncodeToString(b))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", &quarantineError{err}
		}
		q.dir = d
	}
	q.n++
	base := filepath.Base(name)
	if len(base) > 100 {
		base = base[:100]
	}
	return filepath.Join(q.dir, fmt.Sprintf("%d-%s", q.n, base)), nil
}

// config removes the findings' entries from their (one) live file, keeping the original.
func (q *quarantineDir) config(all []Finding, idx []int) error {
	path := all[idx[0]].Path
	mark := func(action, kept, restore string) {
		for _, i := range idx {
			all[i].Action, all[i].Kept, all[i].Restore = action, []string{kept}, restore
		}
	}
	q.prepare(path)
	pp, err := pinParent(path)
	if err != nil {
		return err
	}
	defer pp.close()
	fi, err := os.Lstat(pp.Path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		// A link (maybe to a file of yours outside): never written through; the link
		// itself goes.
		dst, err := q.move(path)
		if err != nil {
			return err
		}
		mark("moved the link aside", dst, fmt.Sprintf("mv %s %s", shq(dst), shq(path)))
		return nil
	}
	data, err := readRegularNoFollow(pp.Path, 64<<20)
	if err != nil && denied(err) {
		q.prepare(path)
		if q.acc.grant(path, 0o400) == nil {
			data, err = readRegularNoFollow(pp.Path, 64<<20)
		}
	}
	if err != nil {
		return err
	}
	es, perr := ParseConfig(data)
	want := map[string]int{}
	for _, i := range idx {
		want[entryID(all[i].entry)]++
	}
	var drop []Entry
	for _, e := range es {
		if id := entryID(e); want[id] > 0 {
			want[id]--
			drop = append(drop, e)
		}
	}
	out := RemoveSpans(data, drop)
	left, lerr := ParseConfig(out)
	// Never a half edit: when the file no longer reads as expected (it changed since the
	// audit read it), the whole file is moved aside instead.
	clean := perr == nil && lerr == nil && len(drop) == len(idx) && len(left) == len(es)-len(drop)
	kept, err := q.slot(path)
	if err != nil {
		return err
	}
	q.prepare(path)
	if !clean {
		if kept, err = q.moveTree(path, kept); err != nil {
			return err
		}
		mark("moved the whole file aside (it changed since the audit read it)", kept, fmt.Sprintf("mv %s %s", shq(kept), shq(path)))
		return nil
	}
	if err := os.WriteFile(kept, data, 0o600); err != nil {
		return err
	}
	// A fresh temporary file (O_EXCL: never through a link planted beside the config),
	// renamed over the live one.
	tf, err := os.CreateTemp(pp.Dir, ".box-audit-*")
	if err != nil {
		return err
	}
	tmp := tf.Name()
	_, err = tf.Write(out)
	if err == nil {
		err = tf.Chmod(fi.Mode().Perm())
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, pp.Path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	var keys []string
	for _, e := range drop {
		keys = append(keys, e.Name)
	}
	mark("removed "+strings.Join(keys, ", ")+" from the live file; the original is kept", kept,
		fmt.Sprintf("cp %s %s", shq(kept), shq(path)))
	return nil
}

func (q *quarantineDir) repo(f *Finding, before *Snapshot) error {
	q.prepare(f.Path)
	fi, err := os.Lstat(f.Path)
	if err != nil {
		return err
	}
	if f.Path != "" && filepath.Base(f.Path) != ".git" && fi.IsDir() {
		// A bare-looking directory: without HEAD and config git no longer takes it for a
		// repository; the rest (objects, refs, anything else) stays where it is.
		var kept, restore []string
		for _, n := range []string{"HEAD", "config", "hooks"} {
			p := filepath.Join(f.Path, n)
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			dst, err := q.move(p)
			if err != nil {
				return err
			}
			kept = append(kept, dst)
			restore = append(restore, fmt.Sprintf("mv %s %s", shq(dst), shq(p)))
		}
		f.Action = "moved its HEAD, config and hooks aside"
		f.Kept, f.Restore = kept, strings.Join(restore, "; ")
		return nil
	}
	dst, err := q.move(f.Path)
	if err != nil {
		return err
	}
	f.Action, f.Kept, f.Restore = "moved the repository's .git aside", []string{dst}, fmt.Sprintf("mv %s %s", shq(dst), shq(f.Path))
	if DisableKeptDefuse || !fi.IsDir() {
		return nil
	}
	// The restore undoes what was renamed, also when a rename then failed.
	renamed, err := defuse(dst)
	restore := []string{f.Restore}
	for _, rel := range slices.Backward(renamed) { // parents first: their contents were renamed before them
		restore = append(restore, fmt.Sprintf("mv %s %s", shq(filepath.Join(f.Path, rel+defusedSuffix)), shq(filepath.Join(f.Path, rel))))
	}
	f.Restore = strings.Join(restore, "; ")
	if err != nil {
		return fmt.Errorf("the kept copy %s is still a git directory: %w", dst, err)
	}
	f.Action += " (its HEAD and config renamed NAME" + defusedSuffix + " there: git takes the kept copy for no repository and reads nothing of it)"
	return nil
}

// defusedSuffix is added to the name of every file git reads first in a kept git
// directory (defuse).
const defusedSuffix = ".box-quarantined"

// defused are the names defuse renames wherever they are in a kept git directory: git
// takes a directory for a repository only when its HEAD is valid, and named one
// (--git-dir, GIT_DIR) it reads its config, the config's worktree part and the config of
// the directory commondir names, even without HEAD (git 2.39 runs an alias from there).
var defused = map[string]bool{"HEAD": true, "config": true, "config.worktree": true, "commondir": true}

// defuse renames every entry of the tree at kept (a git directory moved aside) that git
// reads first (defused) to NAME.box-quarantined, and returns their paths relative to
// kept. So no git command run in the quarantine (git log there, to see what the run
// did, or git --git-dir naming it) reads the kept config, whose aliases, core.pager or
// core.fsmonitor the sandbox may have set, or runs a kept hook: the kept .git, a linked
// worktree's or a submodule's git directory in it, or any directory the sandbox shaped
// like one (hostile review, session 16). The tree is box's now: a directory the sandbox
// left closed is opened to walk it.
func defuse(kept string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(kept, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
				if err := os.Chmod(p, fi.Mode().Perm()|0o700); err != nil {
					return err
				}
			}
		}
		if p != kept && defused[d.Name()] {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Deepest first: a directory named config is renamed after what is in it.
	var renamed []string
	for _, p := range slices.Backward(found) {
		if err := os.Rename(p, p+defusedSuffix); err != nil {
			return renamed, err
		}
		rel, _ := filepath.Rel(kept, p)
		renamed = append(renamed, rel)
	}
	return renamed, nil
}

// moveRestore moves f.Path aside and, when put is set, writes back the content from
// before the run.
func (q *quarantineDir) moveRestore(f *Finding, old []byte, mode os.FileMode, put bool) error {
	dst, err := q.move(f.Path)
	if err != nil {
		return err
	}
	f.Kept = []string{dst}
	f.Action = "moved aside"
	f.Restore = fmt.Sprintf("mv %s %s", shq(dst), shq(f.Path))
	if put {
		pp, err := pinParent(f.Path)
		var w *os.File
		if err == nil {
			w, err = os.OpenFile(pp.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			pp.close()
		}
		if err == nil {
			_, err = w.Write(old)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("putting back the version from before the run: %w", err)
		}
		f.Action = "moved aside; the version from before the run is back in place"
		f.Restore = fmt.Sprintf("mv -f %s %s", shq(dst), shq(f.Path))
	}
	return nil
}

func (q *quarantineDir) move(p string) (string, error) {
	dst, err := q.slot(p)
	if err != nil {
		return "", err
	}
	q.prepare(p)
	got, err := q.moveTree(p, dst)
	if err == nil {
		q.acc.forget(p)
	}
	return got, err
}

// moveTree renames src to dst and returns where it is now. Across file systems it
// copies, keeping holes (dirbox's copy: a sparse file stays sparse) and links as links,
// and removes src once the copy is whole; past the audit's copy bound, or when the copy
// runs out of room, it renames src aside in its own directory instead
// (PARENT/.box-quarantined-STAMP-N-NAME): git no longer finds it there, and nothing is
// written out.
func (q *quarantineDir) moveTree(src, dst string) (string, error) {
	ps, err := pinParent(src)
	if err != nil {
		return "", err
	}
	defer ps.close()
	err = os.Rename(ps.Path, dst)
	if !errors.Is(err, syscall.EXDEV) {
		return dst, named(err, src)
	}
	// Everything in it must be readable to copy, and removable after.
	if err := q.acc.openTree(src); err != nil {
		return "", err
	}
	size, err := allocated(src)
	if err == nil && q.limit > 0 && q.copied+size > q.limit {
		return q.besides(src, fmt.Sprintf("%s: %d bytes on disk, past the audit's copy bound (%d bytes)", src, size, q.limit))
	}
	if err == nil {
		err = copyAny(ps.Path, dst)
	}
	if err != nil {
		os.RemoveAll(dst)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			return q.besides(src, src+": the quarantine's file system is full")
		}
		return "", err
	}
	q.copied += size
	return dst, named(os.RemoveAll(ps.Path), src)
}

// besides renames src aside in its own directory (no copy), for moveTree.
func (q *quarantineDir) besides(src, why string) (string, error) {
	q.n++
	ps, err := pinParent(src)
	if err != nil {
		return "", err
	}
	defer ps.close()
	name := fmt.Sprintf(".box-quarantined-%s-%d-%s", q.now.UTC().Format("20060102T150405Z"), q.n, filepath.Base(src))
	dst := filepath.Join(filepath.Dir(src), name)
	if err := os.Rename(ps.Path, ps.Dir+"/"+name); err != nil {
		return "", named(err, src)
	}
	q.beside = append(q.beside, why)
	return dst, nil
}

func copyAny(src, dst string) error {
	fi, err := os.Lstat(src)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		if _, err := dirbox.CopyTree(src, dst); err != nil {
			return err
		}
		// Its directories stay open to their owner: to read it, and remove it.
		var a access
		return a.openTree(dst)
	case fi.Mode().IsRegular():
		return dirbox.CopyFile(src, dst)
	case fi.Mode()&fs.ModeSymlink != 0:
		l, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(l, dst)
	}
	return nil // a fifo or device: nothing of yours to keep
}

// allocated is what a copy of p that keeps holes writes: its blocks on disk.
func allocated(p string) (int64, error) {
	var n int64
	err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(q, &st); err != nil {
			return err
		}
		n += st.Blocks * 512
		return nil
	})
	return n, err
}

// unread moves aside whole a path box could not read (see FindUnread).
func (q *quarantineDir) unread(f *Finding) error {
	dst, err := q.move(f.Path)
	if err != nil {
		return err
	}
	f.Action = "moved aside whole (box could not read it: " + f.before.Why + ")"
	f.Kept, f.Restore = []string{dst}, fmt.Sprintf("mv %s %s", shq(dst), shq(f.Path))
	return nil
}

func (q *quarantineDir) manifest(r *Report) error {
	// docs/json.md: every field present, a list [] when empty.
	m := *r
	if m.Beside == nil {
		m.Beside = []string{}
	}
	m.Findings = make([]Finding, len(r.Findings))
	for i, f := range r.Findings {
		if f.Kept == nil {
			f.Kept = []string{}
		}
		f.Exec = slices.Clone(f.Exec)
		if f.Exec == nil {
			f.Exec = []ConfigEntry{}
		}
		for j := range f.Exec {
			if f.Exec[j].Via == nil {
				f.Exec[j].Via = []Loc{}
			}
		}
		m.Findings[i] = f
	}
	b, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(q.dir, "manifest.json"), append(b, '\n'), 0o600)
}

// shq quotes s for a POSIX shell.
func shq(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '@' || r == '=' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		return s
	}
	if safe(s) != s {
		// What the terminal would be shown escaped (a control character, bytes that
		// are not UTF-8) is written as bash's and zsh's $'\xNN': the escaped path in
		// plain quotes named no file, so the restore line did not restore (hostile
		// review, session 19: a directory named with an OSC sequence).
		var b strings.Builder
		b.WriteString("$'")
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' || c == '\'':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c >= 0x7f:
				fmt.Fprintf(&b, "\\x%02x", c)
			default:
				b.WriteByte(c)
			}
		}
		return b.String() + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Print writes the report for a person: one block per finding (what, what it would have
// run, what box did), then how to inspect and restore. Nothing when there is nothing.
func (r *Report) Print(w io.Writer) {
	if len(r.Findings) == 0 && r.Incomplete == "" {
		return
	}
	rel := func(p string) string {
		if x, err := filepath.Rel(r.Workdir, p); err == nil && !strings.HasPrefix(x, "..") {
			p = x
		}
		return oneLine(p)
	}
	if n := len(r.Findings); n > 0 {
		fmt.Fprintf(w, "box: audit: the sandbox left %d thing(s) the host would execute; each is moved aside:\n", n)
	}
	var prev Finding
	for _, f := range r.Findings {
		switch f.Kind {
		case FindConfig:
			fmt.Fprintf(w, "box: audit: %s: %s %s = %s (line %d)\n", rel(f.Path), f.Change, oneLine(f.Key), oneLine(f.Value), f.Line)
		case FindRepo:
			fmt.Fprintf(w, "box: audit: %s: new git repository\n", rel(f.Path))
			for _, e := range f.Exec {
				fmt.Fprintf(w, "box: audit:     %s = %s\n", oneLine(e.Name), oneLine(e.Value))
			}
		case FindPointer:
			fmt.Fprintf(w, "box: audit: %s: .git pointer %s\n", rel(f.Path), f.Change)
		case FindFile:
			fmt.Fprintf(w, "box: audit: %s: protected file %s\n", rel(f.Path), f.Change)
		case FindUnparsable:
			fmt.Fprintf(w, "box: audit: %s: git no longer reads this config\n", rel(f.Path))
		case FindGitPointer:
			fmt.Fprintf(w, "box: audit: %s: git pointer file %s\n", rel(f.Path), f.Change)
		case FindUnread:
			fmt.Fprintf(w, "box: audit: %s: box could not read it, even granting itself the modes\n", rel(f.Path))
		}
		fmt.Fprintf(w, "box: audit:   would run: %s\n", oneLine(f.Runs))
		if len(f.Kept) > 0 && slices.Equal(f.Kept, prev.Kept) && f.Action == prev.Action {
			continue // one rewrite of one file: said once
		}
		prev = f
		fmt.Fprintf(w, "box: audit:   box: %s\n", safe(f.Action))
		if f.Restore != "" && f.Error == "" {
			fmt.Fprintf(w, "box: audit:   restore (read it first): %s\n", safe(f.Restore))
		}
		if f.Fix != "" {
			fmt.Fprintf(w, "box: audit:   to let box finish: %s (then run box again in this directory)\n", safe(f.Fix))
		}
	}
	for _, b := range r.Beside {
		fmt.Fprintf(w, "box: audit: renamed aside where it was, not copied: %s\n", oneLine(b))
	}
	if r.Incomplete != "" {
		fmt.Fprintf(w, "box: audit: incomplete: %s\n", oneLine(r.Incomplete))
	}
	if r.Quarantine != "" {
		fmt.Fprintf(w, "box: hint: the originals and manifest.json are in %s (ls -la it to inspect)\n", oneLine(r.Quarantine))
	}
}

// oneLine makes s safe to print on a terminal: names and values come from the sandbox,
// so control characters (escape sequences, newlines) are shown escaped, never sent.
func oneLine(s string) string {
	s = safe(s)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// safe escapes control characters, and truncates nothing (a restore command must be
// whole).
func safe(s string) string { return termtext.Escape(s, false) }
