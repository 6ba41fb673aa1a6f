package bwrap_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// dirSwapLoop is the tenant of a first run: it swaps the directory dir (a second run's
// working directory, inside the first run's tree) with a link to far (a directory
// outside that tree, as the host names it), atomically (RENAME_EXCHANGE), each one staying
// a random few microseconds, until STOP appears; it leaves dir a directory again.
func dirSwapLoop(t *testing.T, dir, far string) string {
	nr, ok := renameat2[runtime.GOARCH]
	if !ok {
		t.Fatalf("no renameat2 number for %s", runtime.GOARCH)
	}
	return fmt.Sprintf(`my ($s, $l) = ("%s", "%s.link");
unlink $l; symlink("%s", $l) or die "symlink: $!";
open(my $f, ">", "READY") or die; close $f;
until (-e "STOP") { for (1..2000) { syscall(%d, -100, $s, -100, $l, 2); for (my $j = int(rand(3000)); $j > 0; $j--) {} } }
syscall(%d, -100, $s, -100, $l, 2) if -l $s;
print "loop ended\n";`, dir, dir, far, nr, nr)
}

// A second run started from a shell already in a directory inside a first run's tree,
// while that run's sandbox swaps the directory with a link to a directory elsewhere
// (hostile review, session 14): the launch guard resolved the working directory by its
// path, following links, and again the scan, so a moment when the link stood there made
// the guard hold the far directory (no overlap: no wait) and the second run launched
// beside the first sandbox on its tree, or in the far directory the tenant chose. The
// second run must wait for the first, then run in its own directory.
func TestConcurrentRunGuardNotFooledByPathSwap(t *testing.T) {
	w := guardedWorld(t)
	inner := filepath.Join(w.proj, "inner")
	far := filepath.Join(w.home, "src", "far")
	w.write(filepath.Join(inner, "MINE"), "")
	w.write(filepath.Join(far, "FAR"), "")
	gate := filepath.Join(w.home, "GO") // outside every sandbox: the real home
	var tries []string
	for i := 0; i < 16; i++ {
		os.Remove(gate)
		os.Remove(filepath.Join(w.proj, "STOP"))
		os.Remove(filepath.Join(w.proj, "READY"))
		sh := w.shellIn(inner, gate, `exec "$BOX" run -y -- sh -c 'echo "RAN in $(pwd)"; ls'`)
		bo, be, bdone := sh.stdout, sh.stderr, sh.done
		a := w.startRun(`perl -e '` + dirSwapLoop(t, "inner", far) + `'`)
		waitFile(t, filepath.Join(w.proj, "READY"), a.done, a.stderr)
		w.write(gate, "")
		waited := false
		deadline := time.After(90 * time.Second)
	watch:
		for {
			if strings.Contains(be.String(), "box: waiting for the run") {
				waited = true
				break
			}
			select {
			case <-bdone:
				break watch
			case <-deadline:
				t.Fatalf("attempt %d: the second run neither waited nor ended:\n%s", i, be)
			case <-time.After(20 * time.Millisecond):
			}
		}
		w.write(filepath.Join(w.proj, "STOP"), "")
		select {
		case <-a.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the first run did not end:\n%s", a.stderr)
		}
		if !strings.Contains(a.stdout.String(), "loop ended") {
			t.Fatalf("attempt %d: the first run's loop did not end well:\n%s\n%s", i, a.stdout, a.stderr)
		}
		if !waited {
			if strings.Contains(bo.String(), "RAN in") {
				t.Fatalf("attempt %d: the second run launched while the first run's sandbox lived on its tree (it did not wait):\n%s\n%s", i, bo, be)
			}
			// Not launched, but not kept waiting either: the guard must hold it.
			t.Errorf("attempt %d: the second run ended without waiting for the first: %s", i, lastLine(be.String()))
			continue
		}
		select {
		case <-bdone:
		case <-time.After(2 * time.Minute):
			t.Fatalf("attempt %d: the second run did not end after the first:\n%s", i, be)
		}
		if !strings.Contains(bo.String(), "RAN in "+inner+"\n") || !strings.Contains(bo.String(), "MINE") {
			t.Fatalf("attempt %d: the second run did not run in its own directory: %q\n%s", i, bo, be)
		}
		tries = append(tries, fmt.Sprintf("attempt %d: waited", i))
	}
	t.Log(strings.Join(tries, "\n"))
}

// One tree under two names: a second run started in a bind mount of the first run's
// project (the operator's own alias, in a mount namespace of its own here), or of a
// directory inside it (hostile review, session 14). The first run's sandbox writes the
// same directories under either name, so the second run must wait for it; a guard that
// compared paths let it launch at once.
func TestConcurrentRunGuardSeesBindMountedTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make the bind mount")
	}
	for _, sub := range []string{"", "inner"} {
		name := "the project"
		if sub != "" {
			name = "a directory inside it"
		}
		t.Run(name, func(t *testing.T) {
			w := guardedWorld(t)
			src := filepath.Join(w.proj, sub)
			w.write(filepath.Join(src, "MINE"), "")
			alias := filepath.Join(w.home, "src", "alias")
			w.write(filepath.Join(alias, ".keep"), "")
			a := w.startRun(`touch READY; ` + waitFor("STOP") + `echo first ended`)
			waitFile(t, filepath.Join(w.proj, "READY"), a.done, a.stderr)
			stopped := false
			defer func() {
				if !stopped {
					w.write(filepath.Join(w.proj, "STOP"), "")
					<-a.done
				}
			}()
			c := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
				`mount --bind "$SRC" "$ALIAS" && cd "$ALIAS" && exec setpriv --reuid=`+fmt.Sprint(w.uid)+` --regid=`+fmt.Sprint(w.gid)+` --clear-groups "$BOX" run -y -- sh -c 'echo "RAN in $(pwd)"; ls'`)
			c.Env = append(append([]string{}, w.env...), "SRC="+src, "ALIAS="+alias, "BOX="+w.box)
			second := w.startCmd(c)
			o, e, done := second.stdout, second.stderr, second.done
			for !strings.Contains(e.String(), "box: waiting for the run") {
				select {
				case <-done:
					t.Fatalf("the second run, in a bind mount of the first one's tree, did not wait for it:\n%s\n%s", o.String(), e.String())
				case <-time.After(60 * time.Second):
					t.Fatalf("the second run neither waited nor ended:\n%s", e.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			w.write(filepath.Join(w.proj, "STOP"), "")
			<-a.done
			stopped = true
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("the second run did not end after the first:\n%s", e.String())
			}
			if !strings.Contains(o.String(), "RAN in "+alias+"\n") || !strings.Contains(o.String(), "MINE") {
				t.Errorf("the second run, after the first: %q\n%s", o.String(), e.String())
			}
		})
	}
}

// box new --backend bwrap from a shell in a directory inside a live run's tree, while
// that run's sandbox swaps the directory with a link to a directory elsewhere (hostile
// review, session 14): box new resolved the working directory by its path, following
// links, so a moment when the link stood there bound the new box to the far directory
// the tenant chose, writable in every session. The box must be bound to the shell's own
// directory (whatever its name at that moment: the tenant may rename it in its tree).
func TestBwrapBoxNewNotBoundThroughSwappedLink(t *testing.T) {
	w := guardedWorld(t)
	inner := filepath.Join(w.proj, "inner")
	far := filepath.Join(w.home, "src", "far")
	w.write(filepath.Join(inner, "MINE"), "")
	w.write(filepath.Join(far, "FAR"), "")
	gate := filepath.Join(w.home, "GO") // outside every sandbox: the real home
	// The operator's shell, already in inner before the tenant's loop starts, mints boxes
	// once told to.
	sh := w.shellIn(inner, gate, `for i in $(seq 40); do "$BOX" new --backend bwrap --name "b$i" >/dev/null || echo "b$i: exit $?"; done`)
	a := w.startRun(`perl -e '` + dirSwapLoop(t, "inner", far) + `'`)
	waitFile(t, filepath.Join(w.proj, "READY"), a.done, a.stderr)
	w.write(gate, "")
	err := <-sh.done
	w.write(filepath.Join(w.proj, "STOP"), "")
	select {
	case <-a.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the first run did not end:\n%s", a.stderr)
	}
	if err != nil {
		t.Fatalf("the shell: %v\n%s%s", err, sh.stdout, sh.stderr)
	}
	var list []struct{ Name, Workdir string }
	if err := json.Unmarshal([]byte(w.must("list", "--json").stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatalf("no box was made:\n%s%s", sh.stdout, sh.stderr)
	}
	var bound []string
	for _, b := range list {
		if b.Workdir == far || !strings.HasPrefix(b.Workdir, w.proj+"/") {
			t.Errorf("box %s is bound to %s, not to the shell's directory in %s", b.Name, b.Workdir, w.proj)
		}
		bound = append(bound, b.Name+": "+b.Workdir)
	}
	t.Logf("%d boxes (failures: %q):\n%s", len(list), sh.stdout.String()+sh.stderr.String(), strings.Join(bound, "\n"))
}
