package protect

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Render prints the set as --dry-run shows it: one line per bound path, saying why; the
// absent project paths (not bound, checked after the run) in one line per project root;
// then the read-write binds, the pins and the profile's changes.
func (s Set) Render(w io.Writer) {
	fmt.Fprintf(w, "protected (read-only inside; what host tools would execute or obey):\n")
	var absent []string
	for _, p := range s.Protected {
		if !p.Bound() {
			absent = append(absent, p.Path)
			continue
		}
		how := ""
		if p.Absent {
			how = ", absent: placeholder " + string(p.Placeholder)
		}
		fmt.Fprintf(w, "  ro %s  [%s%s]  %s\n", p.Path, p.Entry, how, p.Why)
	}
	byDir := map[string][]string{}
	var dirs []string
	for _, a := range absent {
		d := filepath.Dir(a)
		for strings.HasSuffix(d, "/.claude") {
			d = filepath.Dir(d)
		}
		if byDir[d] == nil {
			dirs = append(dirs, d)
		}
		rel, _ := filepath.Rel(d, a)
		byDir[d] = append(byDir[d], rel)
	}
	for _, d := range dirs {
		fmt.Fprintf(w, "  absent in %s (creatable; the post-run audit checks them): %s\n", d, strings.Join(byDir[d], " "))
	}
	for _, b := range s.Binds {
		fmt.Fprintf(w, "  rw git directory outside the working directory: %s\n", b)
	}
	for _, d := range s.Pins {
		fmt.Fprintf(w, "  pinned (cannot be renamed away): %s\n", d)
	}
	for _, d := range s.Dropped {
		fmt.Fprintf(w, "  DROPPED by the profile (protect_drop): %s\n", d)
	}
	for _, a := range s.Added {
		fmt.Fprintf(w, "  added by the profile (protect_add): %s\n", a)
	}
}
