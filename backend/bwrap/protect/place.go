package protect

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// Hint says what to do.
func (e *ChangedError) Hint() string {
	return "another process is changing the working directory: stop it (another box run there?) and launch again"
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
