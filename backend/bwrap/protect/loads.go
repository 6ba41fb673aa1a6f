package protect

import "fmt"

// loads gathers the files in the working directory that one kind of config (mise
// configs, yarn rc and pnpm configs) has a host tool load, within the bounds the .envrc
// files' loads have too: maxEnvrcSources files and maxEnvrcNotes notes, the rest counted
// and said once. The configs are the sandbox's to write, so nothing they name is
// unbounded, and nothing past a bound is dropped without a word.
type loads struct {
	what           string // the configs, as the notes name them
	workdir        string
	seen           map[string]bool
	out, notes     []string
	noted, skipped int
}

func newLoads(what, workdir string) *loads {
	return &loads{what: what, workdir: workdir, seen: map[string]bool{}}
}

// note keeps s among the first maxEnvrcNotes notes, else counts it.
func (l *loads) note(s string) {
	if l.noted++; l.noted <= maxEnvrcNotes {
		l.notes = append(l.notes, s)
	}
}

// add keeps p when it lies in the working directory (not the directory itself), once,
// among the first maxEnvrcSources files, else counts it.
func (l *loads) add(p string) {
	if !within(p, l.workdir) || p == l.workdir || l.seen[p] {
		return
	}
	if len(l.out) == maxEnvrcSources {
		l.skipped++
		return
	}
	l.seen[p] = true
	l.out = append(l.out, p)
}

// result is the files kept and the notes, with one for each bound passed.
func (l *loads) result() (out, notes []string) {
	if l.noted > maxEnvrcNotes {
		l.notes = append(l.notes, fmt.Sprintf("the %s name %d more values box cannot resolve: what they name is not protected", l.what, l.noted-maxEnvrcNotes))
	}
	if l.skipped > 0 {
		l.notes = append(l.notes, fmt.Sprintf("the %s name %d more files past the %d box protects: those are not protected", l.what, l.skipped, maxEnvrcSources))
	}
	return l.out, l.notes
}
