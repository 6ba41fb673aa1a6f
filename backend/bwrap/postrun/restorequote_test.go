package postrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The sandbox names the directories of a submodule it makes (.git/modules/NAME), and an
// unparsable config there is reported with a command for the operator to run: the path
// in it is quoted for the shell. A hostile review (session 18) named one
// m$(touch PWNED) and the suggested git config --file ... --list ran the touch.
func TestUnparsableRestoreQuoted(t *testing.T) {
	wd := t.TempDir()
	p := filepath.Join(wd, ".git", "modules", "m$(touch PWNED)", "config")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("[core\n"), 0o644)
	before := &Snapshot{Workdir: wd, Writable: []string{wd}}
	r := Neutralise(before, []Finding{{Kind: FindUnparsable, Path: p}}, t.TempDir(), time.Now())
	cmd, ok := strings.CutPrefix(r.Findings[0].Restore, "fix the file by hand (")
	cmd, ok2 := strings.CutSuffix(cmd, " shows the bad line)")
	if !ok || !ok2 {
		t.Fatalf("restore %q", r.Findings[0].Restore)
	}
	sh := exec.Command("sh", "-c", cmd)
	sh.Dir = wd
	sh.Run() // git's own verdict does not matter: only what the shell ran
	if _, err := os.Stat(filepath.Join(wd, "PWNED")); err == nil {
		t.Fatalf("the suggested command ran the sandbox's name: %q", cmd)
	}
}

// A path the sandbox named with control characters (hostile review, session 19: a
// directory named with an OSC sequence, x\e]0;PWNED\ay) was printed, escaped for the
// terminal, inside plain quotes: the restore line named no file. It is $'...' now, shown
// as it is, and bash reads it back to the very path.
func TestRestoreQuotedControl(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, p := range []string{"/w/x\x1b]0;PWNED\x07y/.git", "/w/a'b\\c\x9bd\xffé/.envrc"} {
		q := shq(p)
		if safe(q) != q {
			t.Errorf("shq(%q) = %q: the terminal is shown it escaped", p, q)
		}
		out, err := exec.Command(bash, "-c", "printf %s "+q).Output()
		if err != nil || string(out) != p {
			t.Errorf("shq(%q) = %q: bash reads it as %q (%v)", p, q, out, err)
		}
	}
}
