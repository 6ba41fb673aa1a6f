package bwrap_test

// Field review (session 13): a container or CI runner started with a tiny open-file
// limit (docker run --ulimit nofile=20:20). Before, box run failed wherever it ran out
// ("pipe2: too many open files", "start /usr/bin/bwrap: too many open files", bwrap's
// "loopback: Failed RTM_NEWADDR: Permission denied", which users take for AppArmor's
// restriction) with a hint to run box --check, which found nothing wrong. Now box refuses
// before anything runs, exit 125, naming the limit and how to raise it; at the minimum
// it asks for, the run works.

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/internal/boxtest"
	"github.com/heavy-duty/box/internal/testenv"
)

func TestNofileFieldCase(t *testing.T) {
	testenv.RequireRoot(t)
	w := boxtest.NewWorld(t)
	// box as the user under a hard limit of n, set by the shell that starts it.
	under := func(n uint64, args ...string) boxtest.Result {
		c := w.Cmd(args...)
		c.Path = "/bin/sh"
		c.Args = append([]string{"/bin/sh", "-c", `ulimit -n ` + strconv.FormatUint(n, 10) + ` && exec "$0" "$@"`, w.Box}, args...)
		return w.Collect(c)
	}
	for _, n := range []uint64{16, 20, 24, 36} {
		ran := "ran" + strconv.FormatUint(n, 10)
		for _, mode := range []string{"bwrap", "landlock"} {
			r := under(n, "run", "-y", "--isolation", mode, "--", "sh", "-c", "echo RAN > "+ran)
			t.Logf("RLIMIT_NOFILE %d, %s: exit %d\n%s", n, mode, r.Code, r.Stderr)
			if r.Code != 125 || !strings.Contains(r.Stderr, "box: error: the open-file limit is "+strconv.FormatUint(n, 10)) || !strings.Contains(r.Stderr, "box: hint: raise it where box is started: ulimit -n") {
				t.Errorf("RLIMIT_NOFILE %d, %s: exit %d, want 125, the limit named and a hint", n, mode, r.Code)
			}
			if strings.Contains(r.Stderr, "too many open files") || strings.Contains(r.Stderr, "bwrap: ") {
				t.Errorf("RLIMIT_NOFILE %d, %s: a bare failure instead of box's refusal", n, mode)
			}
			if _, err := os.Stat(w.Proj + "/" + ran); err == nil {
				t.Errorf("RLIMIT_NOFILE %d, %s: the command ran", n, mode)
			}
		}
	}
	if r := under(bwrap.MinNofile, "run", "-y", "--", "sh", "-c", "echo RAN > ran-min"); r.Code != 0 {
		t.Errorf("RLIMIT_NOFILE %d: exit %d\n%s", bwrap.MinNofile, r.Code, r.Stderr)
	}
	if _, err := os.Stat(w.Proj + "/ran-min"); err != nil {
		t.Errorf("RLIMIT_NOFILE %d: the command did not run: %v", bwrap.MinNofile, err)
	}
}
