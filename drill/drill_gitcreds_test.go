package drill_test

// The drill's git-config credential row (hostile review, session 11): the fixture's
// repository config holds a marker credential (an extraheader, a remote URL's userinfo);
// the probe reads the file inside. PASS: the sandbox reads a copy without it. With the
// redaction switched off in a test build (BOX_UNSAFE_OFF=git-creds), BREACH.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill/lab"
)

const gitCredRow = "secret:git-config-credential"

func TestDrillGitConfigCredential(t *testing.T) {
	switchDrill(t, "git-creds", "secrets", gitCredRow, nil, func(off bool, w *world, r drillRun) {
		if row := r.rows[gitCredRow]; !off && !strings.Contains(row.Observed, "without the credential") {
			t.Errorf("redaction on: the probe did not read the copy: %q", row.Observed)
		}
	})
}

// The system git config's row (hostile review, session 12): the lab lays an /etc of the
// test's own over the machine's (an overlay in the drill's private mount namespace)
// whose gitconfig holds a credential; the probe reads /etc/gitconfig inside. PASS: a
// copy without it. With the redaction off (BOX_UNSAFE_OFF=system-git-creds), BREACH.
func TestDrillSystemGitConfigCredential(t *testing.T) {
	switchDrill(t, "system-git-creds", "secrets", "secret:system-git-config", func(w *world, l *lab.Lab) {
		d := t.TempDir()
		l.EtcUpper, l.EtcWork = filepath.Join(d, "upper"), filepath.Join(d, "work")
		os.MkdirAll(l.EtcWork, 0o755)
		os.MkdirAll(l.EtcUpper, 0o755)
		if err := os.WriteFile(filepath.Join(l.EtcUpper, "gitconfig"), []byte("[http]\n\textraheader = AUTHORIZATION: bearer box-drill-sys-7d2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}, func(off bool, w *world, r drillRun) {
		if strings.Contains(r.stdout+r.stderr, "box-drill-sys-7d2") {
			t.Errorf("the drill printed the credential's value")
		}
	})
}
