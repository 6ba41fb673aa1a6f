package postrun

import "encoding/json"

// A snapshot on disk (the pending snapshot, the tree's baseline) leaves out the Files
// entries that only repeat a guard: a protected path recorded absent, with its guard's
// text. In a tree of 50 repositories they were 4,700 of 5,000 entries and 1 MB of a
// 1.6 MB file that every run marshals and writes twice; reading puts each back from
// Guards, so a snapshot reads back as it was written ("guards_absent" marks the form).

// snapshotFields is Snapshot without its methods (json's encoding of the fields).
type snapshotFields Snapshot

type snapshotDisk struct {
	snapshotFields
	// GuardsAbsent: each guard whose path has no entry in Files was recorded absent,
	// with the guard's text.
	GuardsAbsent bool `json:"guards_absent,omitempty"`
}

// onlyRuns reports whether f is File{Runs: runs}: absent, nothing else known of it
// (TestSnapshotJSONFields fails when File gains a field this does not look at).
func (f File) onlyRuns(runs string) bool {
	return f.Kind == "" && f.Runs == runs && f.Mode == 0 && f.Size == 0 && f.Ino == 0 && f.Ctime == 0 &&
		f.Link == "" && !f.Hook && !f.Todo && !f.TodoExec && f.Why == "" && f.content == nil
}

// JSON is s as written to disk: MarshalJSON's bytes, without encoding/json's second
// pass over them (a big tree's snapshot is most of a megabyte).
func (s *Snapshot) JSON() ([]byte, error) { return s.MarshalJSON() }

// MarshalJSON writes s, leaving out what Guards says again (see above).
func (s Snapshot) MarshalJSON() ([]byte, error) {
	d := snapshotDisk{snapshotFields: snapshotFields(s)}
	if files, ok := withoutAbsentGuards(&s); ok {
		d.Files, d.GuardsAbsent = files, true
	}
	return json.Marshal(&d)
}

// UnmarshalJSON reads a snapshot in either form.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var d snapshotDisk
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*s = Snapshot(d.snapshotFields)
	if d.GuardsAbsent {
		if s.Files == nil {
			s.Files = map[string]File{}
		}
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
	out := make(map[string]File, len(s.Files)-len(first)/2)
	for p, f := range s.Files {
		if runs, ok := first[p]; ok && f.onlyRuns(runs) {
			continue
		}
		out[p] = f
	}
	return out, true
}
