package postrun

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// A tree's baseline: the snapshot taken when no box run held the working directory,
// kept while runs on it last, so a run that starts while another sandbox is running
// judges against it and never takes what that sandbox wrote as its "before"
// (docs/bwrap.md, "Concurrent runs on one tree").

// WriteBaseline writes s to path atomically (a new file beside it, then a rename), never
// through a link.
func WriteBaseline(path string, s *Snapshot) error {
	b, err := s.JSON()
	if err != nil {
		return err
	}
	return WriteBaselineJSON(path, b)
}

// WriteBaselineJSON is WriteBaseline of a snapshot already marshalled (Snapshot.JSON): the launch keeps the same bytes as its pending snapshot, and a snapshot of a big
// tree is not marshalled twice.
func WriteBaselineJSON(path string, b []byte) error {
	id := make([]byte, 6)
	rand.Read(id)
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+hex.EncodeToString(id))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	// Not synced to disk: the baseline is read only by runs that join while this one
	// holds the tree (the same boot; the rename makes it whole for them), and the first
	// run after a crash finds the tree alone and removes it (protect.Enter). An fsync of
	// a big tree's snapshot (1.5 MB with 50 repositories) cost 10-20 ms per run.
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("baseline: %w", err)
	}
	return nil
}

// ReadBaseline reads the baseline at path for workdir: a regular file, not a link,
// box's own snapshot of that working directory; any other state is an error.
func ReadBaseline(path, workdir string) (*Snapshot, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	var s Snapshot
	if err := json.NewDecoder(io.LimitReader(f, 1<<30)).Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Workdir != workdir || s.Repos == nil {
		return nil, fmt.Errorf("%s: not a snapshot of %s", path, workdir)
	}
	if s.Files == nil {
		s.Files = map[string]File{}
	}
	return &s, nil
}

// Joined is the "before" of a run that started while others ran: the baseline, judged
// with this run's own reach (its writable roots, guards and loosened entries). What the
// baseline did not watch (a guard the first run's profile dropped, protect_drop) is
// taken from own, this run's snapshot: the profile that let its sandbox change it is the
// operator's choice for that run.
func Joined(base, own *Snapshot) *Snapshot {
	j := *base
	j.Writable, j.Guards, j.Loosened, j.Home, j.GitdirGuards, j.TopGuards = own.Writable, own.Guards, own.Loosened, own.Home, own.GitdirGuards, own.TopGuards
	j.AnyGuards = own.AnyGuards
	j.Files = make(map[string]File, len(base.Files))
	for p, f := range base.Files {
		j.Files[p] = f
	}
	for p, f := range own.Files {
		if _, ok := j.Files[p]; !ok {
			j.Files[p] = f
		}
	}
	return &j
}

// AuditKnown is Audit, with the findings known calls box's own (its placeholders for
// runs still going) left out.
func AuditKnown(before, after *Snapshot, quarantine string, now time.Time, known func(Finding) bool) *Report {
	var fs []Finding
	for _, f := range Diff(before, after) {
		if known == nil || !known(f) {
			fs = append(fs, f)
		}
	}
	r := Neutralise(before, fs, quarantine, now)
	if r.Incomplete = before.Incomplete; r.Incomplete == "" {
		r.Incomplete = after.Incomplete
	}
	if r.Quarantine != "" && r.Incomplete != "" {
		q := &quarantineDir{dir: r.Quarantine}
		q.manifest(r)
	}
	return r
}
