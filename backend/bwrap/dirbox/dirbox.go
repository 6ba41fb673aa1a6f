// Package dirbox keeps persistent bwrap boxes: a named box is a directory box made and
// stamped under $XDG_DATA_HOME/box/boxes/NAME/, holding the box's own home (bound at
// $HOME in its sandbox), its instance directory (the agent's state), its snapshots and
// its stamp: the template, profile, name, network tier and working directory it was
// made with.
//
// The stamp is the tag boundary, as user.box=1 is for the vm backend: it is written
// last (the box is built in a temporary directory, stamped, then renamed into place
// without replacing anything), and a directory without a valid stamp is not a box:
// every verb refuses it, and box never touches it.
//
//	NAME/box.json                the stamp
//	NAME/lock                    held shared by every sandbox and snapshot, exclusively by rm, restore, rename
//	NAME/session                 held exclusively by the one session (shell, exec, drill) running in the box
//	NAME/state/home/             the box's $HOME
//	NAME/state/instance/         its instance directory (StateDir, resolv.conf)
//	NAME/snapshots/LABEL/state/  a copy of state/, and LABEL/snapshot.json, written last
package dirbox

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
	"golang.org/x/sys/unix"
)

// Magic marks a stamp (and a snapshot's stamp) as box's own.
const (
	Magic         = "box/bwrap-box/1"
	SnapshotMagic = "box/bwrap-snapshot/1"
	StampFile     = "box.json"
	snapStamp     = "snapshot.json"
	maxStamp      = 1 << 20
)

// Root is where the boxes live: $XDG_DATA_HOME/box/boxes.
func Root(dataHome string) string { return filepath.Join(dataHome, "box", "boxes") }

// Stamp is what a box was made with. Fields are a stable format (box.json).
type Stamp struct {
	Magic      string              `json:"box"`
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Profile    *profiles.Profile   `json:"profile"`
	Template   *templates.Template `json:"template"`
	Network    string              `json:"network"`
	Workdir    string              `json:"workdir"`
	Created    time.Time           `json:"created"`
	Origin     string              `json:"origin"` // "mint" or "clone"
	OriginFrom string              `json:"origin_from"`
}

// Box is a stamped box directory.
type Box struct {
	Dir string
	Stamp
}

func (b *Box) state() string { return filepath.Join(b.Dir, "state") }

// Home is the box's own home directory, bound at $HOME.
func (b *Box) Home() string { return filepath.Join(b.state(), "home") }

// Instance is the box's instance directory.
func (b *Box) Instance() string { return filepath.Join(b.state(), "instance") }

// Store is the directory of boxes.
type Store struct{ Root string }

// NotBoxError: a directory sits where a box would be, but box did not make it (no
// stamp, or a stamp that is not box's).
type NotBoxError struct{ Dir, Why string }

func (e *NotBoxError) Error() string {
	return fmt.Sprintf("%s is not a bwrap box (%s): box never touches a directory it did not make", e.Dir, e.Why)
}

// ExistsError: the name is taken.
type ExistsError struct{ Name string }

func (e *ExistsError) Error() string        { return fmt.Sprintf("a box named %q already exists", e.Name) }
func (e *ExistsError) Is(target error) bool { return target == backend.ErrNameTaken }

// BusyError: a lock is held (a sandbox runs in the box, or another verb works on it).
type BusyError struct{ Name string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("box %q is in use (a shell, exec or snapshot runs in it)", e.Name)
}
func (e *BusyError) Hint() string         { return "let it finish, or end it, and try again" }
func (e *BusyError) Is(target error) bool { return target == backend.ErrBusy }

// ErrNotFound: no directory of that name. The CLI then asks the vm backend.
var ErrNotFound = errors.New("no bwrap box of that name")

// ValidName checks a box name: the vm backend's rule, so a name means the same box
// whatever the backend.
func ValidName(name string) error { return backend.ValidName(name) }

// ValidLabel checks a snapshot label (the vm rule, and no leading dot: box's own
// temporary entries start with one).
func ValidLabel(label string) error {
	if err := backend.ValidLabel(label); err != nil {
		return err
	}
	if strings.HasPrefix(label, ".") {
		return &backend.NameError{What: "snapshot name", Name: label, Why: "must not start with a dot"}
	}
	return nil
}

// Lookup finds the box name: ErrNotFound when there is no such directory, a
// *NotBoxError when there is one box did not stamp.
func (s Store) Lookup(name string) (*Box, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.Root, name)
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &NotBoxError{dir, "not a directory"}
	}
	if st, ok := fi.Sys().(*unix.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, &NotBoxError{dir, "owned by another user"}
	}
	var stamp Stamp
	if err := readStamp(filepath.Join(dir, StampFile), &stamp); err != nil {
		return nil, &NotBoxError{dir, err.Error()}
	}
	switch {
	case stamp.Magic != Magic:
		return nil, &NotBoxError{dir, fmt.Sprintf("its stamp is not box's (%q)", stamp.Magic)}
	case stamp.Name != name:
		return nil, &NotBoxError{dir, fmt.Sprintf("its stamp names %q", stamp.Name)}
	case stamp.Profile == nil || stamp.Template == nil:
		return nil, &NotBoxError{dir, "its stamp has no profile or template"}
	}
	if err := stamp.Profile.Validate(); err != nil {
		return nil, &NotBoxError{dir, "its stamped profile: " + err.Error()}
	}
	if err := stamp.Template.Validate(); err != nil {
		return nil, &NotBoxError{dir, "its stamped template: " + err.Error()}
	}
	if err := profiles.ValidNetwork(stamp.Network); err != nil {
		return nil, &NotBoxError{dir, "its stamp: " + err.Error()}
	}
	for _, d := range []string{"state", "state/home", "state/instance", "snapshots"} {
		if fi, err := os.Lstat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			return nil, &NotBoxError{dir, d + " is missing or not a directory"}
		}
	}
	return &Box{Dir: dir, Stamp: stamp}, nil
}

// readStamp reads a small regular file (never through a link) as JSON.
func readStamp(path string, v any) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return errors.New("no stamp")
		}
		return fmt.Errorf("stamp: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxStamp {
		return errors.New("the stamp is not a regular file")
	}
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("unreadable stamp: %v", err)
	}
	return nil
}

// writeStamp writes v as path atomically (a temporary file renamed over it).
func writeStamp(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// List returns the stamped boxes, sorted by name. Directories that are not boxes are
// left out (and untouched).
func (s Store) List() ([]*Box, error) {
	ents, err := os.ReadDir(s.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Box
	for _, e := range ents {
		if ValidName(e.Name()) != nil {
			continue
		}
		if b, err := s.Lookup(e.Name()); err == nil {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Taken reports whether name is used in the store, by a box or by anything else.
func (s Store) Taken(name string) bool {
	_, err := os.Lstat(filepath.Join(s.Root, name))
	return err == nil
}

// Create makes the box st.Name: fill (nil: leave empty) writes its state directory
// (home/ and instance/ exist already), then the stamp is written and the box renamed
// into place. Nothing of a failed create is left behind; a name already taken, by a
// box or by any directory, is refused.
func (s Store) Create(st Stamp, fill func(state string) (CopyStats, error)) (*Box, CopyStats, error) {
	var cs CopyStats
	if err := ValidName(st.Name); err != nil {
		return nil, cs, err
	}
	if s.Taken(st.Name) {
		return nil, cs, &ExistsError{st.Name}
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return nil, cs, err
	}
	tmp, err := os.MkdirTemp(s.Root, ".new-"+st.Name+"-")
	if err != nil {
		return nil, cs, err
	}
	done := false
	defer func() {
		if !done {
			removeAll(tmp)
		}
	}()
	if err := os.Mkdir(filepath.Join(tmp, "snapshots"), 0o700); err != nil {
		return nil, cs, err
	}
	state := filepath.Join(tmp, "state")
	if fill != nil {
		if cs, err = fill(state); err != nil {
			return nil, cs, err
		}
	} else if err := os.Mkdir(state, 0o700); err != nil {
		return nil, cs, err
	}
	for _, d := range []string{"home", "instance"} {
		if err := os.Mkdir(filepath.Join(state, d), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, cs, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "lock"), nil, 0o600); err != nil {
		return nil, cs, err
	}
	st.Magic = Magic
	if st.ID == "" {
		st.ID = newID()
	}
	if err := writeStamp(filepath.Join(tmp, StampFile), st); err != nil {
		return nil, cs, err
	}
	dir := filepath.Join(s.Root, st.Name)
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, cs, &ExistsError{st.Name} // made meanwhile
		}
		return nil, cs, err
	}
	done = true
	return &Box{Dir: dir, Stamp: st}, cs, nil
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Lock takes the box's lock: shared for a sandbox or a snapshot (many at once),
// exclusive for rm, restore and rename. It never waits: a held lock is a *BusyError.
// The returned func releases it; a process that dies releases it too.
func (b *Box) Lock(exclusive bool) (func(), error) {
	f, err := os.OpenFile(filepath.Join(b.Dir, "lock"), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("box %q: lock: %w", b.Name, err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &BusyError{b.Name}
		}
		return nil, err
	}
	return func() { f.Close() }, nil
}

// SessionBusyError: a session (box shell, box exec, box drill --box) runs in the box
// already, and a bwrap box runs one at a time: a second session's bwrap would make its
// mount points under $HOME in a home the first session's sandbox rewrites as it goes,
// and a directory swapped for a link there between box's check and bwrap's mkdir leads
// that mkdir out of the box, onto the host.
type SessionBusyError struct{ Name string }

func (e *SessionBusyError) Error() string {
	return fmt.Sprintf("box %q has a session running already (box shell, box exec or box drill --box): a bwrap box runs one session at a time, since a second one would set up its mounts in a home the first one's sandbox can rewrite meanwhile", e.Name)
}
func (e *SessionBusyError) Is(target error) bool { return target == backend.ErrBusy }

// LockSession takes what a session holds while it runs: the box's lock, shared (rm,
// restore and rename refuse the box meanwhile; a snapshot may copy it live), and the
// session lock, exclusive (a second session is a *SessionBusyError). The session lock's
// file is made on first use: boxes made before it have none. The returned func releases
// both.
func (b *Box) LockSession() (func(), error) {
	unlock, err := b.Lock(false)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(filepath.Join(b.Dir, "session"), unix.O_RDONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("box %q: session lock: %w", b.Name, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		unlock()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &SessionBusyError{b.Name}
		}
		return nil, fmt.Errorf("box %q: session lock: %w", b.Name, err)
	}
	return func() { unix.Close(fd); unlock() }, nil
}

// Busy reports whether a sandbox (or a verb) holds the box's lock now.
func (b *Box) Busy() bool {
	unlock, err := b.Lock(true)
	if err != nil {
		var busy *BusyError
		return errors.As(err, &busy)
	}
	unlock()
	return false
}

// Remove deletes the box: it re-checks the stamp first, and needs the exclusive lock.
func (s Store) Remove(b *Box) error {
	again, err := s.Lookup(b.Name)
	if err != nil {
		return err
	}
	if again.ID != b.ID {
		return fmt.Errorf("box %q changed meanwhile", b.Name)
	}
	unlock, err := b.Lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	// Out of the name first (atomically), so a half-deleted box is never taken for one.
	gone := filepath.Join(s.Root, ".rm-"+b.Name+"-"+newID())
	if err := unix.Renameat2(unix.AT_FDCWD, b.Dir, unix.AT_FDCWD, gone, unix.RENAME_NOREPLACE); err != nil {
		return err
	}
	if err := removeAll(gone); err != nil {
		return &RemainsError{Name: b.Name, Dir: gone, Err: err}
	}
	return nil
}

// RemainsError: box rm took the box out of its name (it is gone, the name is free), but
// what was in it could not all be removed: Dir holds the rest, which no verb lists.
type RemainsError struct {
	Name, Dir string
	Err       error
}

func (e *RemainsError) Error() string {
	return fmt.Sprintf("box %q is deleted (its name is free), but what is left of it, in %s, could not be removed: %v", e.Name, e.Dir, e.Err)
}
func (e *RemainsError) Unwrap() error { return e.Err }

// Rename gives the box a new name; the name must be free in the store (the CLI checks
// the vm backend too).
func (s Store) Rename(b *Box, name string) (*Box, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if s.Taken(name) {
		return nil, &ExistsError{name}
	}
	unlock, err := b.Lock(true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	dir := filepath.Join(s.Root, name)
	if err := unix.Renameat2(unix.AT_FDCWD, b.Dir, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return nil, &ExistsError{name}
		}
		return nil, err
	}
	st := b.Stamp
	st.Name = name
	if err := writeStamp(filepath.Join(dir, StampFile), st); err != nil {
		// Put the box back under its old name: its stamp still says so.
		_ = unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, b.Dir, unix.RENAME_NOREPLACE)
		return nil, err
	}
	return &Box{Dir: dir, Stamp: st}, nil
}

// removeAll removes a tree box made, with nothing running in it (a box under its
// exclusive lock, renamed out of its name; a copy of box's own): os.RemoveAll first; if
// that fails, removeTree, which makes the directories the sandbox locked (chmod 0)
// writable and needs no descriptor per level.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	return removeTree(dir)
}

// removeTree removes dir holding two descriptors whatever its depth (os.RemoveAll holds
// one per level, so a tree deeper than the open-file limit, cheap for a sandbox to make,
// could not be removed): it goes down by openat (never through a link), making each
// directory writable and searchable first, and back up by "..". That is sound only for a
// tree nothing writes meanwhile, which is all box removes.
func removeTree(dir string) error {
	pfd, err := unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	base := filepath.Base(dir)
	cur, err := openWritableDir(pfd, base)
	if err != nil {
		return err
	}
	var path []string // the names from dir down to cur
	last := ""        // the child just emptied: its rmdir must now succeed
	for {
		names, err := dirNames(cur)
		if err != nil {
			unix.Close(cur)
			return err
		}
		down := -1
		for _, n := range names {
			if err := unix.Unlinkat(cur, n, 0); err == nil || errors.Is(err, unix.ENOENT) {
				continue
			} else if !errors.Is(err, unix.EISDIR) {
				unix.Close(cur)
				return fmt.Errorf("remove %s: %w", n, err)
			}
			if err := unix.Unlinkat(cur, n, unix.AT_REMOVEDIR); err == nil {
				continue
			} else if n == last {
				unix.Close(cur)
				return fmt.Errorf("remove %s: %w", filepath.Join(append(path, n)...), err)
			}
			child, err := openWritableDir(cur, n)
			if err != nil {
				unix.Close(cur)
				return fmt.Errorf("remove %s: %w", n, err)
			}
			unix.Close(cur)
			cur, down, path = child, 1, append(path, n)
			break
		}
		if down > 0 {
			last = ""
			continue
		}
		if len(path) == 0 { // dir is empty
			unix.Close(cur)
			return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
		}
		up, err := unix.Openat(cur, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return err
		}
		cur, last, path = up, path[len(path)-1], path[:len(path)-1] // the emptied child goes at the next pass
	}
}

// openWritableDir opens the directory name in dirfd, never through a link, after making
// it readable, writable and searchable (the sandbox may have locked it).
func openWritableDir(dirfd int, name string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, unix.ENOTDIR
	}
	if st.Mode&0o700 != 0o700 {
		// fchmodat follows a link; name is a directory and nothing writes the tree.
		if err := unix.Fchmodat(dirfd, name, 0o700, 0); err != nil {
			return -1, err
		}
	}
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// dirNames reads every name in the directory fd (from its start).
func dirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	d := os.NewFile(uintptr(dup), "")
	defer d.Close()
	return d.Readdirnames(-1)
}
