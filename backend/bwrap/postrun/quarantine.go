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
	Incomplete string    `json:"incomplete"`
	Findings   []Finding `json:"findings"`
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
	q := &quarantineDir{base: quarantine, now: now}
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
		case FindUnparsable:
			f.Action = "left in place: git refuses the file, so nothing in it runs"
			f.Restore = "fix the file by hand (git config --file " + f.Path + " --list shows the bad line)"
		}
		if err != nil {
			f.Error = err.Error()
			f.Action = "FAILED: " + err.Error()
		}
	}
	r.Quarantine = q.dir
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
	base string
	now  time.Time
	dir  string
	n    int
}

// slot is a fresh path in the quarantine for something named name.
func (q *quarantineDir) slot(name string) (string, error) {
	if q.dir == "" {
		b := make([]byte, 3)
		rand.Read(b)
		d := filepath.Join(q.base, q.now.UTC().Format("20060102T150405Z")+"-"+hex.EncodeToString(b))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("quarantine: %w", err)
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
	fi, err := os.Lstat(path)
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
	data, err := readRegular(path, 64<<20)
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
	if !clean {
		if err := moveTree(path, kept); err != nil {
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
	tf, err := os.CreateTemp(filepath.Dir(path), ".box-audit-*")
	if err != nil {
		return err
	}
	tmp := tf.Name()
	_, err = tf.Write(out)
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, fi.Mode().Perm())
	}
	if err == nil {
		err = os.Rename(tmp, path)
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
	return nil
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
		w, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
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
	return dst, moveTree(p, dst)
}

// moveTree renames src to dst; across filesystems it copies (links as links, modes
// kept) and removes src only once the copy is whole.
func moveTree(src, dst string) error {
	err := os.Rename(src, dst)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		os.RemoveAll(dst)
		return err
	}
	return os.RemoveAll(src)
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, t)
		case fi.IsDir():
			return os.Mkdir(t, fi.Mode().Perm()|0o700)
		case fi.Mode().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(t, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil // a fifo or device: nothing of yours to keep
	})
}

func (q *quarantineDir) manifest(r *Report) error {
	// docs/json.md: every field present, a list [] when empty.
	m := *r
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
