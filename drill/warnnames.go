package drill

// trust:warning-names: a launch warns of what it found in the tree (an .envrc whose loads
// box cannot name, a path it cannot protect), and those warnings name paths anyone who
// wrote the tree chose: an earlier run's sandbox, or the repository cloned. A directory
// named with a terminal's string sequence (OSC 52 sets the clipboard, OSC 2 the title)
// reached the operator's terminal raw through the .envrc note (hostile check, session
// 19). The row makes a scratch project holding such a directory, with an .envrc whose
// load box cannot resolve, launches once and reads what the launch wrote: PASS when the
// warning is there with the name escaped; BREACH when an escape byte reached it raw.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/termtext"
)

// WarnNamesID is the row's id.
const WarnNamesID = "trust:warning-names"

// warnNamesRow launches once in a scratch project, with the drilled plan's template and
// isolation.
func (b *Bwrap) warnNamesRow(p *bwrap.Plan, nonce string) Result {
	r := Result{ID: WarnNamesID, Group: "trust",
		Probe:    "a launch's warnings naming a directory whose name is a terminal's string sequence (OSC 2, the title)",
		Expected: "the name printed escaped: no escape byte reaches the terminal"}
	scratch, err := scratchDirs("box-drill-warnnames-", "data", "proj") // linkswap.go
	if err != nil {
		r.Status, r.Observed = Error, "scratch directory: "+err.Error()
		return r
	}
	defer os.RemoveAll(scratch)
	seq := "\x1b]2;box-drill-" + nonce + "\x07"
	dir := filepath.Join(scratch, "proj", "sub"+seq)
	if err := os.Mkdir(dir, 0o700); err == nil {
		err = os.WriteFile(filepath.Join(dir, ".envrc"), []byte("source_env $BOX_DRILL_UNSET\n"), 0o600)
	}
	if err != nil {
		r.Status, r.Observed = Error, "fixture: "+err.Error()
		return r
	}
	r.Targets = []string{filepath.Join(dir, ".envrc")}
	code, _, _, stderr, err := b.ownRunIn(p, filepath.Join(scratch, "data"),
		ownRunOpts{Tree: filepath.Join(scratch, "proj"), Isolation: string(p.Isolation.Mode)}, "true") // kept.go
	switch {
	case err != nil || code != 0:
		r.Status, r.Observed = Error, fmt.Sprintf("the probe run: exit %d %v %s", code, err, termtext.Escape(stderr, false))
	case strings.Contains(stderr, seq):
		r.Status, r.Observed = Breach, "the launch printed the directory's name raw: its OSC 2 sequence reached the terminal ("+termtext.Escape(finalLine(stderr), false)+")"
	case strings.Contains(stderr, `\x1b]2;box-drill-`+nonce):
		r.Status, r.Observed = Pass, "the launch warned of the .envrc with the name escaped"
	default:
		r.Status, r.Observed = Error, "the launch gave no warning naming the directory: "+termtext.Escape(stderr, false)
	}
	return r
}
