package drill_test

// The drill's git-config credential row (hostile review, session 11): the fixture's
// repository config holds a marker credential (an extraheader, a remote URL's userinfo);
// the probe reads the file inside. PASS: the sandbox reads a copy without it. With the
// redaction switched off in a test build (BOX_UNSAFE_OFF=git-creds), BREACH.

import (
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill"
)

const gitCredRow = "secret:git-config-credential"

func TestDrillGitConfigCredential(t *testing.T) {
	for _, off := range []bool{false, true} {
		w, l := labWorld(t)
		want := drill.Pass
		if off {
			w.withProtectionOff(t, "git-creds")
			want = drill.Breach
		}
		r := w.drill(l, "--network", "none", "--group", "secrets")
		row := r.rows[gitCredRow]
		t.Logf("box drill, redaction off %v (exit %d): %s %q", off, r.code, row.Status, row.Observed)
		r.want(t, gitCredRow, want)
		if !off && !strings.Contains(row.Observed, "without the credential") {
			t.Errorf("redaction on: the probe did not read the copy: %q", row.Observed)
		}
	}
}
