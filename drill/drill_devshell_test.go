package drill_test

// The drill's dev shell import row (hostile review, session 11): the sandbox rewrites
// nix/shell.nix, which the fixture's protected flake.nix imports; outside, the dev shell
// evaluation box run --devshell would do refuses to hand it to the host's Nix (PASS).
// With that switched off in a test build, the host's Nix evaluates it and copies the
// operator's secret into the world-readable store (BREACH).

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/drill"
	"github.com/heavy-duty/box/internal/testenv"
)

const devShellImportRow = "host-exec:devshell-import"

func TestDrillDevShellImport(t *testing.T) {
	testenv.NixDaemon(t)
	switchDrill(t, "devshell-writable", "host-exec", devShellImportRow, nil, func(off bool, w *world, r drillRun) {
		r.want(t, hostExecRow, drill.Pass)
		if row := r.rows[devShellImportRow]; off && !strings.Contains(row.Observed, "world-readable store") {
			t.Errorf("guard off: the secret did not reach the store: %q", row.Observed)
		}
		leftNothing(t, filepath.Join(w.proj, ".box-drill-*"))
	})
}
