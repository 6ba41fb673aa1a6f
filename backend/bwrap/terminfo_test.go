package bwrap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/envaudit"
)

// Where the host finds $TERM's entry decides what the sandbox gets: nothing for a
// system entry, TERMINFO for a directory it sees, else xterm-256color, said aloud, with
// TERM's origin kept (field review, session 16: ~/.terminfo's entry left programs inside
// with an unknown terminal).
func TestTermInfo(t *testing.T) {
	sys, home := t.TempDir(), t.TempDir()
	defer func(d []string) { terminfoSystemDirs = d }(terminfoSystemDirs)
	terminfoSystemDirs = []string{sys}
	put := func(dir, term string) {
		os.MkdirAll(filepath.Join(dir, term[:1]), 0o755)
		os.WriteFile(filepath.Join(dir, term[:1], term), []byte("x"), 0o644)
	}
	put(sys, "xterm-256color")
	put(filepath.Join(home, ".terminfo"), "xterm-kitty")

	if f := readTermInfo(map[string]string{"TERM": "xterm-256color"}, home); !f.System {
		t.Errorf("a system entry: %+v", f)
	}
	f := readTermInfo(map[string]string{"TERM": "xterm-kitty"}, home)
	if f.System || f.Dir != "" || f.Elsewhere != filepath.Join(home, ".terminfo") || !f.Fallback {
		t.Fatalf("an entry in the home: %+v", f)
	}
	p := &Plan{}
	boxSet := map[string]string{}
	term := p.terminfo(f, boxSet)
	vars := []envaudit.Var{{Name: "TERM", Value: "xterm-kitty", Origin: "base"}}
	setTerm(vars, term)
	if vars[0] != (envaudit.Var{Name: "TERM", Value: "xterm-256color", Origin: "base"}) || len(boxSet) != 0 {
		t.Errorf("the sandbox's TERM: %+v, box's variables %v", vars, boxSet)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "the sandbox gets TERM=xterm-256color") {
		t.Errorf("not said: %q", p.Warnings)
	}

	// A directory the sandbox sees (ghostty's TERMINFO under /usr): TERMINFO enters.
	p, boxSet = &Plan{}, map[string]string{}
	if term := p.terminfo(TermInfoFact{Term: "xterm-ghostty", Dir: "/usr/share/ghostty/terminfo", Fallback: true}, boxSet); term != "" ||
		boxSet["TERMINFO"] != "/usr/share/ghostty/terminfo" || len(p.Warnings) != 0 {
		t.Errorf("a visible directory: TERM %q, %v, %q", term, boxSet, p.Warnings)
	}
	// A name that is no path.
	if terminfoEntry(sys, "../x") != "" || terminfoEntry(sys, "") != "" {
		t.Error("a TERM with a slash or empty named an entry")
	}
}
