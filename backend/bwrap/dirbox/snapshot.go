package dirbox

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/heavy-duty/box/backend"
	"golang.org/x/sys/unix"
)

// Snapshot is a box's saved state.
type Snapshot struct {
	Magic   string    `json:"box"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// NoSnapshotError and SnapshotExistsError are the backends' shared refusals.
type (
	NoSnapshotError     = backend.NoSnapshotError
	SnapshotExistsError = backend.SnapshotExistsError
)

func (b *Box) snapDir(label string) string { return filepath.Join(b.Dir, "snapshots", label) }

// Snapshots lists the box's complete snapshots (stamped), oldest first.
func (b *Box) Snapshots() ([]Snapshot, error) {
	ents, err := os.ReadDir(filepath.Join(b.Dir, "snapshots"))
	if err != nil {
		return nil, err
	}
	var out []Snapshot
	for _, e := range ents {
		if ValidLabel(e.Name()) != nil || !e.IsDir() {
			continue
		}
		var s Snapshot
		if readStamp(filepath.Join(b.snapDir(e.Name()), snapStamp), &s) == nil && s.Magic == SnapshotMagic && s.Name == e.Name() {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// snapshot finds a complete snapshot.
func (b *Box) snapshot(label string) (string, error) {
	snaps, err := b.Snapshots()
	if err != nil {
		return "", err
	}
	var have []string
	for _, s := range snaps {
		if s.Name == label {
			return filepath.Join(b.snapDir(label), "state"), nil
		}
		have = append(have, s.Name)
	}
	return "", &NoSnapshotError{Box: b.Name, Name: label, Have: have}
}

// TakeSnapshot copies the box's state into snapshots/LABEL. A sandbox may run
// meanwhile (the lock is shared): the copy is of a live home, as a vm snapshot is.
func (b *Box) TakeSnapshot(label string, now time.Time) (CopyStats, error) {
	var cs CopyStats
	if err := ValidLabel(label); err != nil {
		return cs, err
	}
	if _, err := os.Lstat(b.snapDir(label)); err == nil {
		return cs, &SnapshotExistsError{Box: b.Name, Name: label}
	}
	unlock, err := b.Lock(false)
	if err != nil {
		return cs, err
	}
	defer unlock()
	tmp, err := os.MkdirTemp(filepath.Join(b.Dir, "snapshots"), ".new-")
	if err != nil {
		return cs, err
	}
	ok := false
	defer func() {
		if !ok {
			removeAll(tmp)
		}
	}()
	if cs, err = CopyTree(b.state(), filepath.Join(tmp, "state")); err != nil {
		return cs, err
	}
	if err := writeStamp(filepath.Join(tmp, snapStamp), Snapshot{Magic: SnapshotMagic, Name: label, Created: now.UTC()}); err != nil {
		return cs, err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, b.snapDir(label), unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return cs, &SnapshotExistsError{Box: b.Name, Name: label}
		}
		return cs, err
	}
	ok = true
	return cs, nil
}

// Restore rolls the box's state back to the snapshot label: the copy is made aside,
// then swapped in atomically (RENAME_EXCHANGE), and the old state removed. It needs the
// exclusive lock: no sandbox may run in the box meanwhile.
func (b *Box) Restore(label string) (CopyStats, error) {
	var cs CopyStats
	src, err := b.snapshot(label)
	if err != nil {
		return cs, err
	}
	unlock, err := b.Lock(true)
	if err != nil {
		return cs, err
	}
	defer unlock()
	tmp := filepath.Join(b.Dir, ".restore-"+newID())
	if cs, err = CopyTree(src, tmp); err != nil {
		removeAll(tmp)
		return cs, err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, b.state(), unix.RENAME_EXCHANGE); err != nil {
		removeAll(tmp)
		return cs, err
	}
	return cs, removeAll(tmp) // now the old state
}

// Clone makes the box st.Name from src's state, or from its snapshot label (""): the
// clone has the source's home as it was, logged-in state and all.
func (s Store) Clone(src *Box, label string, st Stamp) (*Box, CopyStats, error) {
	from := src.state()
	if label != "" {
		var err error
		if from, err = src.snapshot(label); err != nil {
			return nil, CopyStats{}, err
		}
	}
	unlock, err := src.Lock(false)
	if err != nil {
		return nil, CopyStats{}, err
	}
	defer unlock()
	return s.Create(st, func(state string) (CopyStats, error) { return CopyTree(from, state) })
}
