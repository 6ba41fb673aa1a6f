package bwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/errs"
)

// The Landlock mode's refusal names the config holding a credential in a command for the
// operator to run; an earlier sandbox names a submodule's git directory it makes
// (.git/modules/NAME), so the path is quoted for the shell. A hostile review (session 18)
// named one m$(touch PWNED): the hint's git config --file ... ran the touch.
func TestLandlockGitCredsHintQuoted(t *testing.T) {
	wd := t.TempDir()
	f := filepath.Join(wd, ".git", "modules", "m$(touch PWNED)", "config")
	p := &Plan{GitCreds: []GitCred{{File: f, Key: "remote.origin.url", Where: "value"}}}
	h := errs.HintOf(p.landlockGitCreds())
	_, cmd, _ := strings.Cut(h, "(")
	cmd, _, _ = strings.Cut(cmd, ", or --remove-section")
	if !strings.HasPrefix(cmd, "git config --file ") {
		t.Fatalf("hint %q", h)
	}
	sh := exec.Command("sh", "-c", cmd)
	sh.Dir = wd
	sh.Run()
	if _, err := os.Stat(filepath.Join(wd, "PWNED")); err == nil {
		t.Fatalf("the hint's command ran the sandbox's name: %q", cmd)
	}
}

// A config's credentials are said in one line, keys and where, never the values.
func TestGitCredsWarningOneLinePerFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "config")
	data := "[remote \"origin\"]\n\turl = https://u:s3cret@git.example/x.git\n[http \"https://git.example/\"]\n\textraheader = Authorization: Bearer t0ken\n[user]\n\tname = me\n"
	p := &Plan{}
	if err := p.redactGitConfig(f, map[string]GitConfigRead{f: {Data: []byte(data)}}, dir); err != nil {
		t.Fatal(err)
	}
	want := f + " holds 2 credentials (remote.origin.url, in its value; http.https://git.example/.extraheader, in its value): the sandbox sees a copy without them"
	if len(p.Warnings) != 1 || p.Warnings[0] != want {
		t.Errorf("warnings %q, want [%q]", p.Warnings, want)
	}
	if w := strings.Join(p.Warnings, "\n"); strings.Contains(w, "s3cret") || strings.Contains(w, "t0ken") {
		t.Errorf("a warning shows a value: %q", w)
	}
}
