package bwrap

import (
	"fmt"
	"github.com/heavy-duty/box/envaudit"
	"os"
	"path/filepath"
	"strings"
)

// A terminal whose terminfo entry the host finds only in your home (kitty's, ghostty's,
// wezterm's, foot's: ~/.terminfo, or $TERMINFO/$TERMINFO_DIRS, which do not enter) left
// every program inside with an unknown terminal: tput, less ("terminal is not fully
// functional"), vim (E558), htop, git's pager (field review, session 16). box tells the
// sandbox where a visible entry is, or falls back to a TERM the system has.

// terminfoSystemDirs are ncurses' compiled-in directories, read-only in the sandbox.
var terminfoSystemDirs = []string{"/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo", "/usr/lib/terminfo"}

// terminfoFallback is the TERM the sandbox gets when its own has no entry it can see:
// every terminal that names itself otherwise speaks xterm's sequences.
const terminfoFallback = "xterm-256color"

// TermInfoFact is where the host finds $TERM's terminfo entry (Gather).
type TermInfoFact struct {
	Term      string
	System    bool   // in a system directory, which the sandbox sees
	Dir       string // else a directory outside the home that holds it ($TERMINFO, $TERMINFO_DIRS under /usr or /opt)
	Elsewhere string // else where the host finds it, out of the sandbox's sight ("" none found)
	Fallback  bool   // terminfoFallback is in a system directory
}

// terminfoEntry is the entry for term under dir, as ncurses names it (the first letter, or
// its hex code on case-insensitive systems), "" if neither exists.
func terminfoEntry(dir, term string) string {
	if dir == "" || term == "" || strings.ContainsAny(term, "/\x00") || strings.HasPrefix(term, ".") {
		return ""
	}
	for _, sub := range []string{term[:1], fmt.Sprintf("%02x", term[0])} {
		p := filepath.Join(dir, sub, term)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// readTermInfo finds $TERM's entry as ncurses would on the host.
func readTermInfo(env map[string]string, home string) TermInfoFact {
	t := TermInfoFact{Term: env["TERM"]}
	if t.Term == "" {
		return t
	}
	for _, d := range terminfoSystemDirs {
		if terminfoEntry(d, t.Term) != "" {
			t.System = true
		}
		if terminfoEntry(d, terminfoFallback) != "" {
			t.Fallback = true
		}
	}
	if t.System {
		return t
	}
	dirs := []string{env["TERMINFO"]}
	if home != "" {
		dirs = append(dirs, filepath.Join(home, ".terminfo"))
	}
	dirs = append(dirs, filepath.SplitList(env["TERMINFO_DIRS"])...)
	for _, d := range dirs {
		if !filepath.IsAbs(d) || terminfoEntry(d, t.Term) == "" {
			continue
		}
		d = filepath.Clean(d)
		if strings.HasPrefix(d, "/usr/") || strings.HasPrefix(d, "/opt/") {
			t.Dir = d
			return t
		}
		if t.Elsewhere == "" {
			t.Elsewhere = d
		}
	}
	return t
}

// terminfo decides the sandbox's TERM and TERMINFO (pure): nothing when the system has
// the entry; TERMINFO when a directory the sandbox sees has it; else the fallback TERM,
// said aloud. It returns the TERM the sandbox gets in place of yours ("" yours): the
// variable keeps its origin (base), so the trust record sees the same names whichever
// terminal you run box in.
func (p *Plan) terminfo(t TermInfoFact, boxSet map[string]string) string {
	if t.Term == "" || t.System {
		return ""
	}
	if t.Dir != "" {
		boxSet["TERMINFO"] = t.Dir
		return ""
	}
	where := "no terminfo entry on this host"
	if t.Elsewhere != "" {
		where = "its terminfo entry is in " + t.Elsewhere + ", which the sandbox does not see"
	}
	if !t.Fallback {
		p.warn("TERM=%s: %s, and the system has no %s to fall back on: programs inside will not know the terminal", t.Term, where, terminfoFallback)
		return ""
	}
	p.warn("TERM=%s: %s; the sandbox gets TERM=%s (your terminal speaks its sequences)", t.Term, where, terminfoFallback)
	return terminfoFallback
}

// setTerm gives the TERM variable among vars the value term (its origin kept).
func setTerm(vars []envaudit.Var, term string) {
	for i := range vars {
		if vars[i].Name == "TERM" && term != "" {
			vars[i].Value = term
		}
	}
}
