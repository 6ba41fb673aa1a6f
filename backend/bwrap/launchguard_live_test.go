package bwrap_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/internal/testenv"
)

// linkSwapLoop is the tenant of a first run: it swaps the directory dir (the work tree
// of a nested repository, which the protected set binds read-only whole at dir/.git)
// with a link to the working directory itself through bwrap's /oldroot, atomically
// (RENAME_EXCHANGE) and as fast as it can, until STOP appears. Every path below the link
// exists at its far end (the working directory's own .git), so a second run's bwrap
// never fails: it binds dir/.git read-only there, outside its sandbox's view, and the
// nested repository stays writable inside.
func linkSwapLoop(t *testing.T, dir, target string) string {
	nr, ok := renameat2[runtime.GOARCH]
	if !ok {
		t.Fatalf("no renameat2 number for %s", runtime.GOARCH)
	}
	return fmt.Sprintf(`my ($s, $l, $t) = ("%s", "%s.link", "/oldroot%s");
open(my $f, ">", "READY") or die; close $f;
for (my $i = 0; ; $i++) {
  if ($i %% 2000 == 0) {
    last if -e "STOP";
    my $d = (-d $s && !-l $s) ? $s : (-d $l && !-l $l) ? $l : undef;
    if (!$d) { unlink $s; unlink $l; $d = $s; }   # an audit moved it aside: a new one
    system("git", "init", "-q", $d) unless -d "$d/.git";
    my $o = $d eq $s ? $l : $s;
    symlink($t, $o) unless -l $o;
  }
  syscall(%d, -100, $s, -100, $l, 2);
}
syscall(%d, -100, $s, -100, $l, 2) if -l $s;
print "loop ended\n";`, dir, dir, target, nr, nr)
}

// tryHook is a second run's command: wherever the nested repository is (dir or dir.link,
// as the first run's loop left it), write a hook into it; read-only whole inside, it
// must fail.
func tryHook(dir string) string {
	return `i=0; while [ $i -lt 300 ]; do i=$((i+1)); for d in ` + dir + ` ` + dir + `.link; do
  if [ -d $d/.git/hooks ] && [ ! -L $d ] && (echo 'touch /tmp/pwned' > $d/.git/hooks/post-checkout) 2>/dev/null; then echo "WROTE $d/.git/hooks/post-checkout"; exit 0; fi
done; done; echo "no write"`
}

// Two runs at once on one tree, the first one's sandbox swapping a nested repository's
// work tree for a link (hostile review, session 13): the second run's bwrap made its
// read-only bind of sub/.git at the far end of the link, or its scan of the tree missed
// the repository while the link was in place, and its sandbox wrote a hook into the
// user's nested repository (seen failing without the fix: attempt 1 of a manual run,
// attempt 2 of this test with BOX_TEST_OFF=launch-guard; and with a guard that checked
// only the mount points, after the scan: attempt 0, the scan had missed it). The second
// run waits for the first to end, says so and for which run, and then finds the nested
// repository read-only. The same holds for a second run in a directory inside the first
// one's tree, which the first one's sandbox writes (a guard per tree let it through).
func TestConcurrentRunWaitsForLinkSwapper(t *testing.T) {
	testenv.RequireTool(t, "git")
	testenv.RequireTool(t, "perl")
	for _, inner := range []string{"", "inner"} {
		name := "same tree"
		if inner != "" {
			name = "a run inside the tree"
		}
		t.Run(name, func(t *testing.T) { linkSwapCase(t, inner) })
	}
}

// linkSwapCase: the first run works in the project and swaps inner/sub; the second runs
// in the project's directory inner ("" for the project itself).
func linkSwapCase(t *testing.T, inner string) {
	w := guardedWorld(t)
	bdir := filepath.Join(w.proj, inner)
	if inner != "" {
		if out, err := w.hostGit(w.proj, "init", "-q", inner); err != nil {
			t.Fatal(out)
		}
	}
	if out, err := w.hostGit(bdir, "init", "-q", "sub"); err != nil {
		t.Fatal(out)
	}
	a := w.startRun(`perl -e '` + linkSwapLoop(t, filepath.Join(inner, "sub"), bdir) + `'`)
	waitFile(t, filepath.Join(w.proj, "READY"), a.done, a.stderr)
	stopA := func() {
		w.write(filepath.Join(w.proj, "STOP"), "")
		select {
		case <-a.done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the first run did not end:\n%s", a.stderr)
		}
	}
	waited := false
	var tries []string
	for i := 0; i < 10 && !waited; i++ {
		b := w.startRunIn(bdir, tryHook("sub"))
		for !waited {
			if strings.Contains(b.stderr.String(), "box: waiting for the run") {
				waited = true
				break
			}
			select {
			case <-b.done:
			case <-time.After(50 * time.Millisecond):
				continue
			}
			if strings.Contains(b.stdout.String(), "WROTE") {
				stopA()
				t.Fatalf("attempt %d: the second run's sandbox wrote into the nested repository (read-only whole inside): %s\n%s", i, b.stdout, b.stderr)
			}
			tries = append(tries, fmt.Sprintf("attempt %d: %s %s", i, strings.TrimSpace(b.stdout.String()), lastLine(b.stderr.String())))
			break
		}
		if !waited {
			continue
		}
		if !strings.Contains(b.stderr.String(), "perl -e") {
			t.Errorf("the waiting run does not name the run it waits for:\n%s", b.stderr)
		}
		select {
		case <-b.done:
			t.Fatalf("the second run ended while the first ran:\n%s\n%s", b.stdout, b.stderr)
		case <-time.After(time.Second):
		}
		stopA()
		b.wait()
		if !strings.Contains(b.stdout.String(), "no write") {
			t.Errorf("the second run, after the first ended: %q\n%s", b.stdout, b.stderr)
		}
	}
	if !waited {
		stopA()
		t.Fatalf("no second run waited for the first:\n%s", strings.Join(tries, "\n"))
	}
	if !strings.Contains(a.stdout.String(), "loop ended") {
		t.Errorf("the first run's loop did not run to its end:\n%s\n%s", a.stdout, a.stderr)
	}
	if _, err := os.Stat(filepath.Join(bdir, "sub", ".git", "hooks", "post-checkout")); err == nil {
		t.Errorf("a hook is in the nested repository")
	}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// A read-write mount is held as a tree (hostile review, session 18): a run in ~/src/lib
// planted a repository that a run in ~/src/app2, mounting ~/src/lib read-write, hid
// while the first run's audit looked and put back after, where its own audit had seen
// it at its start; the host's git commit ran the planted hook. Now the run mounting a
// tree another run holds is refused, saying which run, and runs once that one ended;
// and a run in the tree waits while a run mounting it read-write is alive.
func TestLaunchGuardReadWriteMount(t *testing.T) {
	w := guardedWorld(t)
	lib, app := filepath.Join(w.home, "src", "lib"), filepath.Join(w.home, "src", "app2")
	w.write(filepath.Join(lib, "README"), "lib\n")
	w.write(filepath.Join(app, "README"), "app\n")
	w.write(filepath.Join(w.home, ".config/box/profiles/libdev.toml"), "[[mounts]]\npath = \""+lib+"\"\nmode = \"rw\"\n")
	inApp := func(script string) *exec.Cmd {
		c := w.cmd("run", "-y", "-p", "libdev", "--", "sh", "-c", script)
		c.Dir = app
		return c
	}

	x := w.startRunIn(lib, `touch .x-started; `+waitFor(".x-go")+`echo x-done`)
	waitFile(t, filepath.Join(lib, ".x-started"), x.done, x.stderr)
	r := w.collect(inApp(`echo y-ran`))
	if r.code == 0 || strings.Contains(r.stdout, "y-ran") || !strings.Contains(r.stderr, "the read-write mount "+lib+" is in use by the run of pid") ||
		!strings.Contains(r.stderr, "box: hint: wait for that run to end") {
		t.Errorf("a run mounting the tree of a run going on: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(lib, ".x-go"), nil, 0o644)
	if code := x.wait(); code != 0 {
		t.Fatalf("the run in lib: exit %d\n%s", code, x.stderr)
	}
	if r := w.collect(inApp(`echo y-ran`)); r.code != 0 || !strings.Contains(r.stdout, "y-ran") {
		t.Errorf("the run mounting lib once the other ended: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}

	// The other way round: the run in lib waits (blocked on the tree's lock) until the
	// run mounting it has ended, then runs after it.
	y := w.startCmd(inApp(`touch ` + lib + `/.y-started; i=0; while [ ! -e ` + lib + `/.y-go ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 97; sleep 0.05; done; touch ` + lib + `/.y-done`))
	waitFile(t, filepath.Join(lib, ".y-started"), y.done, y.stderr)
	x = w.startRunIn(lib, `[ -e .y-done ] && echo after-y`)
	waitBlockedFlock(t, lib, x.done)
	os.WriteFile(filepath.Join(lib, ".y-go"), nil, 0o644)
	if code := y.wait(); code != 0 {
		t.Fatalf("the run mounting lib: exit %d\n%s", code, y.stderr)
	}
	if code := x.wait(); code != 0 || !strings.Contains(x.stdout.String(), "after-y") || !strings.Contains(x.stderr.String(), "box: waiting for the run of pid") {
		t.Errorf("the run in lib while a run mounting it was alive: exit %d %q\n%s", code, x.stdout, x.stderr)
	}
}

// waitBlockedFlock waits until a process waits for a flock on dir (/proc/locks shows
// it as "-> FLOCK ... DEV:INODE"), failing t if done comes first.
func waitBlockedFlock(t *testing.T, dir string, done <-chan error) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(st.Ino, 10) + " "
	for {
		b, _ := os.ReadFile("/proc/locks")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "-> FLOCK") && strings.Contains(l, ino) {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before it waited for %s: %v", dir, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
