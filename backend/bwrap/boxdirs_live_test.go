package bwrap_test

// box's cache directory is box's own state too (hostile review, session 16): the dev
// shell cache ($XDG_CACHE_HOME/box/devshell) holds, per project, the variables and the
// shellHook a --devshell launch starts its sandbox with, read back without evaluating
// anything. A tier-none run of one project whose profile mounted ~/.cache read-write
// (to share build caches) rewrote another project's entry, adding a shellHook; the
// operator's next `box run --devshell --network full --env GITHUB_TOKEN` there ran it,
// and it printed the token. A read-write mount or a working directory that holds (or
// lies in) box's cache directory is refused now, as box's data and configuration
// directories were.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

func TestBoxCacheDirNotWritable(t *testing.T) {
	w := newWorld(t)
	cache := filepath.Join(w.home, ".cache")
	entry := filepath.Join(cache, "box", "devshell", "0123.json")
	w.write(entry, "{}\n")
	w.write(filepath.Join(w.home, ".config/box/profiles/caches.toml"), "[[mounts]]\npath = \"~/.cache\"\nmode = \"rw\"\n")
	r := w.sh("echo planted > ~/.cache/box/devshell/0123.json", "--profile", "caches")
	if r.code != 125 || !strings.Contains(r.stderr, "box: error: refusing a read-write mount "+cache+": it holds box's own files ("+filepath.Join(cache, "box")+")") {
		t.Errorf("a read-write mount of ~/.cache: exit %d, want 125 and the refusal\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: hint: mount it read-only, or mount a directory that does not contain") {
		t.Errorf("no hint:\n%s", r.stderr)
	}
	// XDG_CACHE_HOME names it wherever it is; a working directory holding it is refused.
	other := filepath.Join(w.home, "caches")
	w.write(filepath.Join(other, "box", "devshell", "0123.json"), "{}\n")
	w.env = append(w.env, "XDG_CACHE_HOME="+other)
	saved := w.proj
	w.proj = other
	r = w.sh("echo planted > box/devshell/0123.json")
	w.proj = saved
	if r.code != 125 || !strings.Contains(r.stderr, "refusing the working directory "+other+": it holds box's own files") {
		t.Errorf("a working directory holding $XDG_CACHE_HOME/box: exit %d, want 125 and the refusal\n%s", r.code, r.stderr)
	}
	for _, p := range []string{entry, filepath.Join(other, "box", "devshell", "0123.json")} {
		if b, _ := os.ReadFile(p); string(b) != "{}\n" {
			t.Errorf("%s was written: %q", p, b)
		}
	}
}

// A profile mount that shows the working directory at another path (hostile review,
// session 16): through a read-only mount of ~/src at /src the sandbox read the token box
// said it hid in ~/src/proj/.git/config ("the sandbox sees a copy without it"), and
// through a read-write one it wrote /src/proj/.git/hooks/pre-commit during the run. Such
// a mount is refused now (MountOverlapError).
func TestMountOverlapRefused(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://oauth2:glpat-boxtestsecret0123456789@gitlab.example/x.git"}} {
		if out, err := w.hostGit(w.proj, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	src := filepath.Dir(w.proj)
	rel := filepath.Base(w.proj)
	w.write(filepath.Join(w.home, ".config/box/profiles/srcro.toml"), "[[mounts]]\npath = \""+src+"\"\ntarget = \"/src\"\n")
	read := "cat /src/" + rel + "/.git/config"
	r := w.sh(read, "--profile", "srcro")
	if r.code != 125 || !strings.Contains(r.stderr, "box: error: profile \"srcro\" mounts "+src+" at /src: it holds the working directory "+w.proj) ||
		!strings.Contains(r.stderr, "box: hint: mount it at its own path") {
		t.Errorf("exit %d, want 125 and the refusal\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "boxtestsecret") {
		t.Errorf("the sandbox read the token through the mount:\n%s", r.stdout)
	}
	// With the refusal off (a test build) the token is read there: the test proves it.
	w.withProtectionOff(t, "mount-overlap")
	if r := w.sh(read, "--profile", "srcro"); !strings.Contains(r.stdout, "boxtestsecret") {
		t.Errorf("with the refusal off the token is not read (the test proves nothing): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
