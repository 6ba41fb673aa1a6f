package protect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// selfCommonDir is the placeholder commondir's content: the directory itself, what git
// assumes without the file.
const selfCommonDir = ".\n"

// Place creates the set's placeholders on the host before launch, so each absent
// protected path exists and is bound read-only. lock (a file in box's own data directory,
// out of the sandbox's reach) is held shared for the run: release removes the temporary
// placeholders only when no other box run on the same tree still holds it (removing a
// path another sandbox has bound would detach that sandbox's read-only mount).
//
// A placeholder box may not create (a git directory you can read but not write) is
// skipped and returned: the sandbox, as the same user, cannot create it either, and the
// caller drops its bind.
func Place(s Set, lock string) (release func(), skipped []string, err error) {
	heldMu.Lock()
	t := held[lock]
	heldMu.Unlock()
	if t != nil {
		// The post-run audit entered the tree for this run: its Leave removes them.
		skipped, err := t.place(s)
		return func() {}, skipped, err
	}
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return nil, nil, err
	}
	lf, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("protected set: lock: %w", err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_SH); err != nil {
		lf.Close()
		return nil, nil, fmt.Errorf("protected set: lock: %w", err)
	}
	var temp []Path
	for _, p := range s.Placeholders() {
		if err := create(p); errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			skipped = append(skipped, p.Path)
			continue
		} else if err != nil && !errors.Is(err, os.ErrExist) {
			lf.Close()
			return nil, nil, fmt.Errorf("protected set: placeholder %s: %w", p.Path, err)
		}
		if p.Placeholder.Temporary() {
			temp = append(temp, p)
		}
	}
	return func() {
		defer lf.Close()
		if len(temp) == 0 || syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return // another run still uses them; the last one out removes them
		}
		for _, p := range temp {
			removeIfPlaceholder(p)
		}
	}, skipped, nil
}

// place creates the set's placeholders under the hold t and registers the temporary ones.
func (t *Hold) place(s Set) (skipped []string, err error) {
	var temp []Path
	for _, p := range s.Placeholders() {
		if err := create(p); errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			skipped = append(skipped, p.Path)
			continue
		} else if err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("protected set: placeholder %s: %w", p.Path, err)
		} else if err == nil && p.Placeholder.Temporary() {
			temp = append(temp, p)
		}
	}
	return skipped, t.register(temp)
}

func create(p Path) error {
	switch p.Placeholder {
	case EmptyDir:
		return os.Mkdir(p.Path, 0o755)
	case EmptyFile, SelfCommonDir:
		f, err := os.OpenFile(p.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return err
		}
		if p.Placeholder == SelfCommonDir {
			if _, err := f.WriteString(selfCommonDir); err != nil {
				f.Close()
				os.Remove(p.Path)
				return err
			}
		}
		return f.Close()
	}
	return fmt.Errorf("no placeholder for %s", p.Entry)
}

// removeIfPlaceholder removes p only while it is still exactly the placeholder.
func removeIfPlaceholder(p Path) {
	if b, err := readSmall(p.Path); err == nil && bytes.Equal(b, []byte(selfCommonDir)) {
		os.Remove(p.Path)
	}
}

// ChangedError: a protected path turned into something box will not bind between the
// scan and the launch (another sandbox on the same tree can race it into a link).
type ChangedError struct{ Path, Now string }

func (e *ChangedError) Error() string {
	return fmt.Sprintf("protected set: %s changed during the launch (now %s); not launched", e.Path, e.Now)
}

// Recheck lstats every path the set binds, right before bwrap runs: bwrap follows links
// when it binds, so a path that became a link since the scan stops the launch. It
// narrows the window to the exec; it cannot close it.
func Recheck(s Set, skipped []string) error {
	skip := map[string]bool{}
	for _, p := range skipped {
		skip[p] = true
	}
	check := func(p string) error {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			return &ChangedError{p, "absent"}
		case fi.Mode()&os.ModeSymlink != 0:
			return &ChangedError{p, "a symbolic link"}
		case !fi.Mode().IsRegular() && !fi.IsDir():
			return &ChangedError{p, "neither file nor directory"}
		}
		return nil
	}
	for _, l := range [][]string{s.Binds, s.Pins, s.ReadOnly()} {
		for _, p := range l {
			if skip[p] {
				continue
			}
			if err := check(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// Hold is one run's hold on a working tree that other box runs may share. Every run
// holds the run lock (lock) shared while it lasts; the gate (lock+".gate") is held
// exclusive only while a run enters or leaves, so that "am I alone?" (an exclusive
// try on the run lock) and what follows from the answer happen as one step: flock's
// conversion between shared and exclusive is not atomic (a failed try drops the shared
// lock), so the run lock is only ever converted under the gate.
//
// Next to the lock, outside every sandbox: the tree's baseline (lock+".before.json",
// the post-run audit's snapshot from when the tree was last quiet; written by the
// audit) and the registry of box's temporary placeholders (lock+".placed", one path a
// line), which the last run out removes.
type Hold struct {
	lock  string
	run   *os.File
	gate  *os.File
	alone bool
}

// held are the trees this process entered, by lock path: Place uses the run's hold
// instead of taking a second one (two holds of one process would each see the other
// as another run).
var (
	heldMu sync.Mutex
	held   = map[string]*Hold{}
)

// Enter takes the gate and the run lock. Alone reports whether no other run held the
// tree; the caller reads or writes the baseline accordingly, then calls Entered.
func Enter(lock string) (*Hold, error) {
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return nil, err
	}
	t := &Hold{lock: lock}
	gate, err := lockFile(lock+".gate", syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	t.gate = gate
	run, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		gate.Close()
		return nil, fmt.Errorf("protected set: lock: %w", err)
	}
	t.run = run
	if syscall.Flock(int(run.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		t.alone = true
		// Runs that were killed left their placeholders and their baseline.
		t.removePlaced()
		os.Remove(t.Baseline())
	} else if err := syscall.Flock(int(run.Fd()), syscall.LOCK_SH); err != nil {
		t.close()
		return nil, fmt.Errorf("protected set: lock: %w", err)
	}
	heldMu.Lock()
	held[lock] = t
	heldMu.Unlock()
	return t, nil
}

// Alone: no other box run held the tree when this one entered.
func (t *Hold) Alone() bool { return t.alone }

// Baseline is where the tree's baseline is kept (see Hold).
func (t *Hold) Baseline() string { return t.lock + ".before.json" }

// Entered ends the entry: the run lock becomes shared and the gate opens.
func (t *Hold) Entered() error {
	defer func() { t.gate.Close(); t.gate = nil }()
	if t.alone {
		// Under the gate no other run converts or tries the run lock.
		if err := syscall.Flock(int(t.run.Fd()), syscall.LOCK_SH); err != nil {
			return fmt.Errorf("protected set: lock: %w", err)
		}
	}
	return nil
}

// Leave takes the gate, learns whether this run is the last one out, and then (gate
// held, so no run enters meanwhile) removes the placeholders and calls audit when it
// is, and removes the baseline after audit when it is. Placeholders box placed for runs
// still going stay, known (Placed).
func (t *Hold) Leave(audit func(placed map[string]bool)) {
	heldMu.Lock()
	if held[t.lock] == t {
		delete(held, t.lock)
	}
	heldMu.Unlock()
	defer t.close()
	var err error
	if t.gate == nil { // not still held from Enter (a run that never started)
		t.gate, err = lockFile(t.lock+".gate", syscall.LOCK_EX)
	}
	last := err == nil && syscall.Flock(int(t.run.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	if last {
		t.removePlaced()
	}
	if audit != nil {
		audit(t.placed())
	}
	if last {
		os.Remove(t.Baseline())
	}
}

func (t *Hold) close() {
	if t.gate != nil {
		t.gate.Close()
	}
	t.run.Close()
}

func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("protected set: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("protected set: lock: %w", err)
	}
	return f, nil
}

// Placed reads the registry of box's temporary placeholders kept next to lock (see
// Hold): for the recovery of a killed run's audit, before any hold is taken.
func Placed(lock string) map[string]bool { return (&Hold{lock: lock}).placed() }

// placed reads the registry of temporary placeholders.
func (t *Hold) placed() map[string]bool {
	out := map[string]bool{}
	f, err := os.OpenFile(t.lock+".placed", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return out
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 16<<20))
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out[l] = true
		}
	}
	return out
}

// removePlaced removes every registered placeholder still exactly one, and the registry.
func (t *Hold) removePlaced() {
	for p := range t.placed() {
		removeIfPlaceholder(Path{Path: p})
	}
	os.Remove(t.lock + ".placed")
}

// register appends temporary placeholders to the registry, under the gate.
func (t *Hold) register(ps []Path) error {
	if len(ps) == 0 {
		return nil
	}
	gate, err := lockFile(t.lock+".gate", syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer gate.Close()
	f, err := os.OpenFile(t.lock+".placed", os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("protected set: placeholders: %w", err)
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Path + "\n")
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return fmt.Errorf("protected set: placeholders: %w", err)
	}
	return f.Close()
}

// IsPlaceholder reports whether path is one of box's temporary placeholders, exactly:
// registered (placed, from Leave) by path, and still a regular file holding exactly
// the placeholder's content.
func IsPlaceholder(path string, placed map[string]bool) bool {
	if !placed[filepath.Clean(path)] {
		return false
	}
	b, err := readSmall(path)
	return err == nil && bytes.Equal(b, []byte(selfCommonDir))
}
