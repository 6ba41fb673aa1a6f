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
