package bwrap_test

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

// socketClient runs inside the sandbox: it connects to a host socket bound before the
// launch, then (once the host has bound it) to one bound after, then to a server of its
// own (path and abstract), then tries the swap attacks: the host's socket renamed over
// its own bound name, a symbolic link and a hard link to the host's. One line each.
const socketClient = `
import os, socket, sys, threading, time
def conn(p):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p); s.settimeout(20); return "GOT " + s.recv(100).decode().strip()
    except OSError as e:
        return "ERR " + (e.strerror or str(e))
    finally:
        s.close()
def serve(p, answer):
    l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(8)
    def acc():
        while True:
            c, _ = l.accept(); c.sendall(answer); c.close()
    threading.Thread(target=acc, daemon=True).start()
    return l
out = ["before " + conn("./dev.sock")]
open("launched", "w").close()
while not os.path.exists("after.ready"):
    time.sleep(0.02)
out.append("after " + conn(os.path.abspath("after.sock")))
own = serve("./own.sock", b"OWN\n")
out.append("own " + conn("./own.sock"))
out.append("ownabs " + conn(os.path.abspath("own.sock")))
name = "\0box-test-own-%d" % os.getpid()
ab = serve(name, b"OWNABSTRACT\n")
out.append("abstract " + conn(name))
mine = serve("./mine.sock", b"MINE\n")
os.rename("dev.sock", "mine.sock")
out.append("swap " + conn("./mine.sock"))
os.rename("mine.sock", "dev.sock")
os.symlink("dev.sock", "ln.sock")
out.append("symlink " + conn("./ln.sock"))
os.link("dev.sock", "hard.sock")
out.append("hardlink " + conn("./hard.sock"))
print("\n".join(out))
`

// hostServer listens on path as the host would (a tmux or dev server the user started),
// answers HOST and counts what it accepted. The socket is the test user's, mode 0777,
// so only box can stand between the sandbox and it.
func hostServer(t *testing.T, w *world, path string) *atomic.Int32 {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	must(t, os.Chown(path, w.uid, w.gid))
	must(t, os.Chmod(path, 0o777))
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Write([]byte("HOST\n"))
			c.Close()
		}
	}()
	return &n
}

// runSocketClient runs socketClient in a sandbox (extra: box run's flags) with host
// servers on ./dev.sock (before the launch) and ./after.sock (bound once the sandbox
// says it has launched), and returns its lines by first word and the host servers'
// accept counts.
func runSocketClient(t *testing.T, w *world, extra ...string) (map[string]string, int32, int32) {
	t.Helper()
	testenv.RequireTool(t, "python3")
	for _, f := range []string{"dev.sock", "after.sock", "after.ready", "launched", "own.sock", "mine.sock", "ln.sock", "hard.sock"} {
		os.Remove(filepath.Join(w.proj, f))
	}
	w.write(filepath.Join(w.proj, "client.py"), socketClient)
	before := hostServer(t, w, filepath.Join(w.proj, "dev.sock"))
	args := append(append([]string{"run", "-y"}, extra...), "--", "python3", "client.py")
	c := w.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	must(t, c.Start())
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	waitFile(t, filepath.Join(w.proj, "launched"), waited, &errb)
	after := hostServer(t, w, filepath.Join(w.proj, "after.sock"))
	w.write(filepath.Join(w.proj, "after.ready"), "")
	if err := <-waited; err != nil {
		t.Fatalf("box %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	lines := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		lines[k] = v
	}
	return lines, before.Load(), after.Load()
}

// TestUnixSocketsMediated: a host unix server on ./dev.sock (bound before the launch) and
// one on ./after.sock (bound after it) never answer the sandbox, at tier none and tier
// full; the sandbox's own servers (path and abstract) answer it; the swap attacks (the
// host's socket renamed over the sandbox's own name, a symbolic link, a hard link) are
// refused. With the mediation off (a test build), the same host servers answer: the
// breach this closes.
func TestUnixSocketsMediated(t *testing.T) {
	w := newWorld(t)
	for _, tier := range []string{"none", "full"} {
		t.Run(tier, func(t *testing.T) {
			got, nBefore, nAfter := runSocketClient(t, w, "--network", tier)
			want := map[string]string{
				"before": "ERR Permission denied", "after": "ERR Permission denied",
				"own": "GOT OWN", "ownabs": "GOT OWN", "abstract": "GOT OWNABSTRACT",
				"swap": "ERR Permission denied", "symlink": "ERR Permission denied", "hardlink": "ERR Permission denied",
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
			if nBefore != 0 || nAfter != 0 {
				t.Errorf("the host servers accepted %d and %d connections from the sandbox", nBefore, nAfter)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		off := newWorld(t)
		off.withProtectionOff(t, "sockets")
		got, nBefore, nAfter := runSocketClient(t, off)
		for _, k := range []string{"before", "after", "swap"} {
			if got[k] != "GOT HOST" {
				t.Errorf("mediation off: %s: %q, want the host's answer (GOT HOST)", k, got[k])
			}
		}
		if nBefore == 0 || nAfter == 0 {
			t.Errorf("mediation off: the host servers accepted %d and %d connections", nBefore, nAfter)
		}
	})
}

// TestUnixSocketsProfileNamed: a profile's sockets key lets the sandbox reach that host
// socket (and only that one); the dry run names it.
func TestUnixSocketsProfileNamed(t *testing.T) {
	w := newWorld(t)
	w.write(filepath.Join(w.home, ".config/box/profiles/db.toml"), "sockets = [\"dev.sock\"]\n")
	got, nBefore, nAfter := runSocketClient(t, w, "--profile", "db")
	if got["before"] != "GOT HOST" || nBefore == 0 {
		t.Errorf("the profile's socket: %q (%d accepted), want the host's answer", got["before"], nBefore)
	}
	if got["after"] != "ERR Permission denied" || nAfter != 0 {
		t.Errorf("a socket the profile does not name: %q (%d accepted)", got["after"], nAfter)
	}
	r := w.run("run", "--dry-run", "--profile", "db", "--", "true")
	if !strings.Contains(r.stdout, "unix sockets: only the sandbox's own") || !strings.Contains(r.stdout, filepath.Join(w.proj, "dev.sock")) {
		t.Errorf("dry run does not account for the named socket:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "lets the sandbox reach the host's unix sockets") {
		t.Errorf("no warning for the profile's sockets:\n%s", r.stderr)
	}
}
