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

// LoadAll loads every name, sorted; the first failure is returned, not skipped.
func LoadAll[T any](names map[string]bool, load func(string) (T, error)) ([]T, error) {
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	out := make([]T, 0, len(sorted))
	for _, n := range sorted {
		v, err := load(n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
