package bwrap_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// renameat2 is the syscall's number for the sandbox's perl (syscall() takes numbers).
var renameat2 = map[string]int{"amd64": 316, "arm64": 276}

// swapLoop is the tenant of a first session: once GO appears in the working directory,
// it swaps ~/src (a real directory, the parent of the working directory's mount point in
// the box's home) with a link to the real home through bwrap's /oldroot, atomically
// (RENAME_EXCHANGE) and as fast as it can, until STOP appears. A second session's check
// of the home (PrepareHome) sees a directory; its bwrap, a moment later, the link, and
// makes the mount point ~/src/proj at the far end: on the host.
func swapLoop(t *testing.T, realHome string) string {
	nr, ok := renameat2[runtime.GOARCH]
	if !ok {
		t.Fatalf("no renameat2 number for %s", runtime.GOARCH)
	}
	return fmt.Sprintf(`my $h = $ENV{HOME}; my ($s, $l) = ("$h/src", "$h/src.link");
open(my $f, ">", "READY") or die; close $f;
sleep 0.05 until -e "GO" || -e "STOP";
until (-e "STOP") {
  rename($l, $s) unless -e $s || -l $s;                 # box removed the link: take the dir back
  symlink("/oldroot%s", $l) unless -e $l || -l $l;
  syscall(%d, -100, $s, -100, $l, 2);
}
syscall(%d, -100, $s, -100, $l, 2) if -l $s;
print "loop ended\n";`, realHome, nr, nr)
}

// Two sessions of one box: the first one's sandbox rewrites the home the second one's
// bwrap sets its mounts up in. A bwrap box runs one session at a time: the second is
// refused (and says what to do), nothing is made outside the box, a snapshot still
// copies the box live, and once the first session ends the next one starts.
// Seen failing without the fix: the second session started, and its bwrap made
// ~/proj in the real home through the link (the first attempt, in a manual run).
func TestBwrapBoxOneSessionAtATime(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "agent")
	outside := filepath.Join(w.home, "proj") // where the link leads the mount point
	first := w.cmd("exec", "-y", "agent", "--", "perl", "-e", swapLoop(t, w.home))
	var out, errb bytes.Buffer
	first.Stdout, first.Stderr = &out, &errb
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- first.Wait() }()
	stop := func() {
		os.WriteFile(filepath.Join(w.proj, "STOP"), nil, 0o644)
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("the first session: %v\n%s", err, errb.String())
			}
		case <-time.After(time.Minute):
			first.Process.Kill()
			t.Errorf("the first session did not end")
		}
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	waitFile(t, filepath.Join(w.proj, "READY"), waited, &errb)
	// A snapshot copies the box while its session runs, as before.
	w.must("snapshot", "agent", "live")
	// box stop leaves the session alone, and says how to end it.
	if r := w.run("stop", "agent"); r.code != 1 || !strings.Contains(r.stderr, "box: error: box stop does not end a bwrap box's sandbox: agent is in use") ||
		!strings.Contains(r.stderr, "box: hint: end the command running in it (exit its shell, or Ctrl-C its box exec)") {
		t.Errorf("box stop while a session runs: exit %d, want 1, the refusal and its hint\n%s", r.code, r.stderr)
	}
	w.write(filepath.Join(w.proj, "GO"), "")
	ran := 0
	for i := range 10 {
		r := w.run("exec", "-y", "agent", "--", "true")
		if _, err := os.Lstat(outside); err == nil {
			t.Fatalf("attempt %d: the second session's bwrap made %s on the host (exit %d)\n%s", i, outside, r.code, r.stderr)
		}
		if r.code == 0 {
			ran++
		} else if !strings.Contains(r.stderr, `box: error: box "agent" has a session running already`) ||
			!strings.Contains(r.stderr, "box: hint: end that session first") {
			t.Fatalf("attempt %d: a second session while the first runs: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	if ran > 0 {
		t.Errorf("%d of 10 second sessions started while the first ran", ran)
	}
	// box shell is a session too.
	if r := w.run("shell", "agent"); r.code == 0 || !strings.Contains(r.stderr, "has a session running already") {
		t.Errorf("box shell beside a session: exit %d\n%s", r.code, r.stderr)
	}
	stop()
	stopped = true
	if !strings.Contains(out.String(), "loop ended") {
		t.Errorf("the first session's loop did not run to its end:\n%s\n%s", out.String(), errb.String())
	}
	if r := w.in("agent", "echo second"); r.code != 0 || strings.TrimSpace(r.stdout) != "second" {
		t.Errorf("a session after the first ended: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Errorf("%s was made on the host", outside)
	}
}

// A copy of a box's state cannot carry a socket (or a device node): a snapshot, a clone
// and a restore say so by name, as a warning even under -q (the copy is not the whole
// box), with the name's control characters escaped (the sandbox chose it).
// Seen failing without the fix: under -q nothing was said (without -q, only a count).
func TestBwrapBoxCopyLeftOutSaid(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "sock")
	r := w.in("sock", `perl -MIO::Socket::UNIX -e 'for my $n ("agent.sock", "t\e]0;PWNED\a.sock") { IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => "$ENV{HOME}/$n", Listen => 1) or die "$n: $!" } print "made\n"'`)
	if !strings.Contains(r.stdout, "made") {
		t.Fatalf("could not make the sockets: %d %q %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"-q", "snapshot", "sock", "s1"},
		{"-q", "new", "--name", "twin", "--from", "sock"},
		{"snapshot", "sock", "s2"},
	} {
		r := w.must(args...)
		if !strings.Contains(r.stderr, "box: warning: ") || !strings.Contains(r.stderr, "left out 2 socket(s)") ||
			!strings.Contains(r.stderr, "home/agent.sock") || !strings.Contains(r.stderr, `home/t\x1b]0;PWNED\x07.sock`) {
			t.Errorf("box %q does not name what it left out:\n%q", args, r.stderr)
		}
		if strings.ContainsRune(r.stderr, 0x1b) {
			t.Errorf("box %q printed the sandbox's escape:\n%q", args, r.stderr)
		}
	}
}

// A tree in the box's home deeper than the operator's open-file limit (cheap to make
// inside) is removed by box rm; before, os.RemoveAll ran out of descriptors, and rm left
// the box, out of its name and listed nowhere, in .rm-NAME-ID with no word of what to do.
// Seen failing without the fix: rm exit 1, "too many open files", .rm-deep-... left.
func TestBwrapBoxRmDeepTree(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "deep")
	if r := w.in("deep", `perl -e 'chdir $ENV{HOME}; for (1..400) { mkdir "d" or die; chdir "d" or die } chmod 0, ".." or die; print "deep\n"'`); !strings.Contains(r.stdout, "deep") {
		t.Fatalf("could not make the tree: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// The operator's limit, lower than the tree is deep (hard too: Go raises the soft one).
	c := w.cmd()
	c.Path, c.Args = "/bin/sh", []string{"sh", "-c", `ulimit -Sn 128 && ulimit -Hn 128 && exec "$0" rm --force deep`, w.box}
	r := w.collect(c)
	if r.code != 0 {
		t.Errorf("rm of a deep box: exit %d\n%s", r.code, r.stderr)
	}
	if ents, _ := os.ReadDir(filepath.Dir(w.boxDir("deep"))); len(ents) != 0 {
		t.Errorf("rm left %v in the store", ents)
	}
}

// A snapshot, a clone and a restore keep the user.* extended attributes the sandbox set
// on its files and directories (tools keep metadata there; overlayfs keeps a Nix store
// layer's there): before, every copy dropped them, saying nothing.
// Seen failing without the fix: the clone's ~/x had no extended attributes.
func TestBwrapBoxCopyKeepsXattrs(t *testing.T) {
	w := newWorld(t)
	w.must("new", "--backend", "bwrap", "--name", "xa")
	r := w.in("xa", `python3 -c 'import os; h=os.environ["HOME"]; os.mkdir(h+"/d"); open(h+"/d/x","w").write("x"); os.setxattr(h+"/d/x","user.mark",b"file"); os.setxattr(h+"/d","user.mark",b"dir"); print("set")'`)
	if !strings.Contains(r.stdout, "set") {
		t.Fatalf("could not set the attributes: %d %q %q", r.code, r.stdout, r.stderr)
	}
	w.must("snapshot", "xa", "s")
	w.must("new", "--name", "xb", "--from", "xa/s")
	w.in("xa", `rm -r ~/d`)
	w.must("restore", "xa", "s", "--force")
	for _, box := range []string{"xa", "xb"} {
		home := filepath.Join(w.boxDir(box), "state", "home")
		for p, want := range map[string]string{"d/x": "file", "d": "dir"} {
			buf := make([]byte, 64)
			n, err := unix.Getxattr(filepath.Join(home, p), "user.mark", buf)
			if err != nil || string(buf[:n]) != want {
				t.Errorf("%s: ~/%s user.mark = %q, %v; want %q", box, p, buf[:max(n, 0)], err, want)
			}
		}
	}
}
