package bwrap_test

// box's profiles where box may not read them (field review, session 16: an unreadable
// $XDG_CONFIG_HOME gave only "open .../profiles/default.toml: permission denied"): the
// run refuses, says where box reads them, and how to go on; nothing is assumed in their
// place.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnreadableProfilesSaid(t *testing.T) {
	w := newWorld(t)
	profiles := filepath.Join(w.home, ".config", "box", "profiles")
	w.write(filepath.Join(profiles, "default.toml"), "memory = \"1G\"\n")
	if err := os.Chmod(profiles, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(profiles, 0o755) })
	r := w.run("run", "-y", "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, "box: error: open "+filepath.Join(profiles, "default.toml")+": permission denied") {
		t.Errorf("exit %d, want the refusal naming the file\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "box: hint: box reads its profiles from "+profiles) {
		t.Errorf("no hint naming the directory:\n%s", r.stderr)
	}
}
