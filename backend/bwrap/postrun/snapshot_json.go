package postrun

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// A snapshot on disk (the pending snapshot, the tree's baseline) leaves out the Files
// entries that only repeat a guard: a protected path recorded absent, with its guard's
// text. In a tree of 50 repositories they were 4,700 of 5,000 entries and 1 MB of a
// 1.6 MB file that every run marshals and writes twice; reading puts each back from
// Guards, so a snapshot reads back as it was written ("guards_absent" marks the form).

// Guards are written as guardsDisk: each distinct text once (a tree of 50 repositories
// has 4,700 guards and 61 texts, and the texts were half of the file), each path under
// Workdir relative to it. Marshalling that snapshot took 20-30 ms of every run's CPU,
// the guards most of it. "guards" is then an object where a box before this form
// expects a list: it refuses the file (a joining run's baseline fails closed) rather
// than read a snapshot without guards. The list form still reads.

// snapshotFields is Snapshot without its methods (json's encoding of the fields).
type snapshotFields Snapshot

type snapshotDisk struct {
	snapshotFields
	// Guards shadows snapshotFields.Guards (the shallower field wins in encoding/json).
	Guards guardsDisk `json:"guards"`
	// GuardsAbsent: each guard whose path has no entry in Files was recorded absent,
	// with the guard's text.
	GuardsAbsent bool `json:"guards_absent,omitempty"`
	// TopsAbsent: by a work tree's .git entry, the indexes in TopGuards of the project
	// files recorded absent at its top (the entry File{Runs: the guard's text, Top}).
	TopsAbsent map[string][]int `json:"tops_absent,omitempty"`
}

// withoutTopsAbsent takes out of files (owned by the caller) the entries recorded absent
// at the top of a work tree with only a top guard's text (File{Runs, Top}, at the
// guard's path below Top's directory), and returns them by work tree as indexes in tops:
// in a tree of 50 repositories they are some four thousand, each with its text, and
// marshalling them was most of a run's JSON.
func withoutTopsAbsent(files map[string]File, tops []Guard) map[string][]int {
	byPath := make(map[string][]int, len(tops))
	for i, g := range tops {
		byPath[g.Path] = append(byPath[g.Path], i)
	}
	var out map[string][]int
	for p, f := range files {
		if f.Top == "" {
			continue
		}
		dir := filepath.Dir(f.Top)
		if len(p) <= len(dir)+1 || p[:len(dir)] != dir || p[len(dir)] != '/' {
			continue
		}
		g := f
		g.Top = ""
		for _, i := range byPath[p[len(dir)+1:]] {
			if g.onlyRuns(tops[i].Runs) {
				if out == nil {
					out = map[string][]int{}
				}
				out[f.Top] = append(out[f.Top], i)
				delete(files, p)
				break
			}
		}
	}
	for _, is := range out {
		slices.Sort(is)
	}
	return out
}

// onlyRuns reports whether f is File{Runs: runs}: absent, nothing else known of it
// (TestSnapshotJSONFields fails when File gains a field this does not look at).
func (f File) onlyRuns(runs string) bool {
	return f.Kind == "" && f.Runs == runs && f.Mode == 0 && f.Size == 0 && f.Ino == 0 && f.Ctime == 0 &&
		f.Link == "" && !f.Hook && !f.Todo && !f.TodoExec && f.Why == "" && f.Top == "" && f.content == nil
}

// JSON is s as written to disk: MarshalJSON's bytes, without encoding/json's second
// pass over them (a big tree's snapshot is most of a megabyte).
func (s *Snapshot) JSON() ([]byte, error) { return s.MarshalJSON() }

// MarshalJSON writes s, leaving out what Guards says again (see above).
func (s Snapshot) MarshalJSON() ([]byte, error) {
	d := snapshotDisk{snapshotFields: snapshotFields(s), Guards: compactGuards(s.Guards, s.Workdir)}
	if files, ok := withoutAbsentGuards(&s); ok {
		d.Files, d.GuardsAbsent = files, true
	} else {
		d.Files = maps.Clone(s.Files)
	}
	d.TopsAbsent = withoutTopsAbsent(d.Files, s.TopGuards)
	return json.Marshal(&d)
}

// UnmarshalJSON reads a snapshot in either form.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var d snapshotDisk
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*s = Snapshot(d.snapshotFields)
	var err error
	if s.Guards, err = d.Guards.expand(s.Workdir); err != nil {
		return err
	}
	if s.Files == nil && (d.GuardsAbsent || len(d.TopsAbsent) > 0) {
		s.Files = map[string]File{}
	}
	// The project files recorded absent at work trees' tops first: a guard's path among
	// them has its entry, with Top, before the guards' fill below.
	for top, is := range d.TopsAbsent {
		for _, i := range is {
			if i < 0 || i >= len(s.TopGuards) || top == "" {
				return fmt.Errorf("snapshot: top guard %d of %d at %q", i, len(s.TopGuards), top)
			}
			s.Files[filepath.Join(filepath.Dir(top), s.TopGuards[i].Path)] = File{Runs: s.TopGuards[i].Runs, Top: top}
		}
	}
	if d.GuardsAbsent {
		for _, g := range s.Guards {
			if _, ok := s.Files[g.Path]; !ok {
				s.Files[g.Path] = File{Runs: g.Runs}
			}
		}
	}
	return nil
}

// withoutAbsentGuards is s.Files without the entries that read back from Guards: a
// path's first guard, recorded absent with that guard's text and nothing else. Only when
// every guard's path has an entry (else reading back would add one): false otherwise.
func withoutAbsentGuards(s *Snapshot) (map[string]File, bool) {
	if len(s.Guards) == 0 {
		return nil, false
	}
	first := make(map[string]string, len(s.Guards))
	for _, g := range s.Guards {
		if _, ok := s.Files[g.Path]; !ok {
			return nil, false
		}
		if _, ok := first[g.Path]; !ok {
			first[g.Path] = g.Runs
		}
	}
	// Sized for what is kept: in a big tree nearly every entry is a guard's, dropped.
	var keep []string // guards' paths whose entry says more than the guard
	for p, runs := range first {
		if !s.Files[p].onlyRuns(runs) {
			keep = append(keep, p)
		}
	}
	out := make(map[string]File, len(s.Files)-len(first)+len(keep))
	for p, f := range s.Files {
		if _, ok := first[p]; !ok {
			out[p] = f
		}
	}
	for _, p := range keep {
		out[p] = s.Files[p]
	}
	return out, true
}

// guardsDisk is a snapshot's Guards as written: Runs[i] indexes Texts for the guard at
// Paths[i]; a path not starting with "/" is relative to the snapshot's Workdir. list
// holds the list form read from an older file.
type guardsDisk struct {
	Texts []string `json:"texts"`
	Runs  []int    `json:"runs"`
	Paths []string `json:"paths"`
	list  []Guard
}

// compactGuards is gs in the written form: exact, expand gives gs back.
func compactGuards(gs []Guard, workdir string) guardsDisk {
	d := guardsDisk{Runs: make([]int, len(gs)), Paths: make([]string, len(gs))}
	index := map[string]int{}
	under := workdir + "/"
	for i, g := range gs {
		n, ok := index[g.Runs]
		if !ok {
			n = len(d.Texts)
			index[g.Runs] = n
			d.Texts = append(d.Texts, g.Runs)
		}
		d.Runs[i] = n
		d.Paths[i] = g.Path
		if workdir != "" && strings.HasPrefix(g.Path, under) {
			d.Paths[i] = g.Path[len(under):]
		}
	}
	return d
}

// expand is the guards d was written from; a malformed form is an error (the file is
// not box's snapshot).
func (d guardsDisk) expand(workdir string) ([]Guard, error) {
	if d.list != nil || d.Paths == nil {
		return d.list, nil
	}
	if len(d.Runs) != len(d.Paths) {
		return nil, fmt.Errorf("snapshot: %d guard texts for %d paths", len(d.Runs), len(d.Paths))
	}
	if len(d.Paths) > 0 && workdir == "" {
		return nil, fmt.Errorf("snapshot: guards without a working directory")
	}
	out := make([]Guard, len(d.Paths))
	for i, p := range d.Paths {
		if d.Runs[i] < 0 || d.Runs[i] >= len(d.Texts) {
			return nil, fmt.Errorf("snapshot: guard text %d of %d", d.Runs[i], len(d.Texts))
		}
		if !strings.HasPrefix(p, "/") {
			p = workdir + "/" + p
		}
		out[i] = Guard{Path: p, Runs: d.Texts[d.Runs[i]]}
	}
	return out, nil
}

// UnmarshalJSON reads either form: the object written now, or an older file's list.
func (d *guardsDisk) UnmarshalJSON(b []byte) error {
	if t := strings.TrimLeft(string(b), " \t\r\n"); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "null") {
		var list []Guard
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		*d = guardsDisk{list: list}
		return nil
	}
	type plain guardsDisk // without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.Paths == nil {
		p.Paths = []string{} // the object form, even empty
	}
	*d = guardsDisk(p)
	return nil
}
