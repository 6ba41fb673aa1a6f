package drill_test

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// A run already under way in the working directory when box drill starts: the drill
// waits for it before it makes its fixture there. It made the fixture at once; the run's
// post-run audit, which judges the tree since that run began, moved the fixture's files
// aside when it ended, and the drill said BREACH on 65 rows of a sound sandbox (field
// review, session 20).
func TestDrillWaitsForRunOnTree(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	holder := w.cmd("run", "-y", "-q", "--", "sh", "-c", "echo held; read x; true")
	in, err := holder.StdinPipe()
	must(t, err)
	hout, err := holder.StdoutPipe()
	must(t, err)
	must(t, holder.Start())
	t.Cleanup(func() { in.Close(); holder.Wait() })
	if line, err := bufio.NewReader(hout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("the holding run: %q, %v", line, err)
	}

	d := w.cmd("drill", "--network", "none", "--group", "host-exec,protect")
	var out strings.Builder
	d.Stdout = &out
	derr, err := d.StderrPipe()
	must(t, err)
	must(t, d.Start())
	var errText strings.Builder
	sc := bufio.NewScanner(derr)
	for sc.Scan() {
		errText.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "box: waiting for the run") {
			break
		}
	}
	in.Close() // the holding run ends: its audit runs now
	must(t, holder.Wait())
	rest, _ := io.ReadAll(derr)
	errText.Write(rest)
	d.Wait()
	if code := d.ProcessState.ExitCode(); code != 0 || strings.Contains(out.String(), "BREACH") {
		t.Errorf("box drill beside a run on the tree: exit %d\n%s%s", code, out.String(), errText.String())
	}
}
