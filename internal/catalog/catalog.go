// Package catalog lists named things (profiles, templates) found in several places: the
// built-ins and a user directory, where a user's entry replaces a built-in of its name.
package catalog

import (
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// Names adds to names each entry of dir that keep maps to a name ("" skips it). Hidden
// entries (.git, editor state) never count. A missing dir adds nothing.
func Names(names map[string]bool, dir string, keep func(fs.DirEntry) string) error {
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if n := keep(e); n != "" {
			names[n] = true
		}
	}
	return nil
}

// LoadAll loads every name, sorted. What fails to load is not skipped: the others are
// returned with a *BrokenError naming each failure, so a listing shows what it can and
// says what it cannot read (one broken file hid every profile: field review, session
// 21).
func LoadAll[T any](names map[string]bool, load func(string) (T, error)) ([]T, error) {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	out := make([]T, 0, len(sorted))
	var broken []error
	for _, n := range sorted {
		v, err := load(n)
		if err != nil {
			broken = append(broken, err)
			continue
		}
		out = append(out, v)
	}
	if broken != nil {
		return out, &BrokenError{Errs: broken}
	}
	return out, nil
}

// BrokenError is LoadAll's: the entries that failed to load, each its own error (in
// name order), the others loaded all the same.
type BrokenError struct{ Errs []error }

func (e *BrokenError) Error() string { return errors.Join(e.Errs...).Error() }

// Unwrap gives each failure to errors.As and errors.Is.
func (e *BrokenError) Unwrap() []error { return e.Errs }
