package bwrap_test

// A profile's read-write mount is a tree the sandbox writes as it writes the working
// directory (hostile review, session 16): the post-run audit walked only the working
// directory, so a hook, a core.fsmonitor or an .envrc the sandbox planted in a mounted
// repository (a sibling library the agent edits, ~/lib) stayed, unreported, and the
// operator's next git status there ran it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heavy-duty/box/internal/testenv"
)

func TestSandboxPostRunAuditReadWriteMount(t *testing.T) {
	testenv.RequireTool(t, "git")
	w := newWorld(t)
	marks := w.markerDir()
	lib, notes := filepath.Join(w.home, "lib"), filepath.Join(w.home, "notes")
	w.write(filepath.Join(lib, "README"), "lib\n")
	w.write(filepath.Join(notes, "todo.txt"), "notes\n")
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"commit", "-q", "-m", "one"}} {
		if out, err := w.hostGit(lib, args...); err != nil {
			t.Fatal(args, err, out)
		}
	}
	w.write(filepath.Join(w.home, ".config/box/profiles/libw.toml"),
		"[[mounts]]\npath = \"~/lib\"\nmode = \"rw\"\n\n[[mounts]]\npath = \"~/notes\"\nmode = \"rw\"\n")
	plant := `set -e
printf '#!/bin/sh\ntouch ` + marks + `/hook\n' > ~/lib/.git/hooks/post-commit; chmod +x ~/lib/.git/hooks/post-commit
printf '[core]\n\tfsmonitor = "touch ` + marks + `/fsmonitor; false"\n' >> ~/lib/.git/config
echo 'touch ` + marks + `/envrc' > ~/lib/.envrc
mkdir -p ~/notes/sub/.git/objects ~/notes/sub/.git/refs
echo 'ref: refs/heads/main' > ~/notes/sub/.git/HEAD
printf '[core]\n\tfsmonitor = "touch ` + marks + `/nested; false"\n' > ~/notes/sub/.git/config
echo 'touch ` + marks + `/notes-envrc' > ~/notes/.envrc`
	r := w.sh(plant, "--profile", "libw")
	t.Logf("exit %d\n%s", r.code, r.stderr)
	if r.code != 0 {
		t.Errorf("exit %d, want 0 (every finding neutralised)", r.code)
	}
	for _, p := range []string{lib + "/.git/hooks/post-commit", lib + "/.git/config", lib + "/.envrc", notes + "/sub/.git", notes + "/.envrc"} {
		if !strings.Contains(r.stderr, "box: audit: "+p) {
			t.Errorf("the audit does not report %s", p)
		}
	}
	for _, p := range []string{lib + "/.git/hooks/post-commit", lib + "/.envrc", notes + "/sub/.git", notes + "/.envrc"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still in place", p)
		}
	}
	// The operator, after the run: git status and a commit in the mounted repository,
	// and in the planted one.
	w.hostGit(lib, "status")
	w.hostGit(lib, "commit", "-q", "--allow-empty", "-m", "two")
	w.hostGit(filepath.Join(notes, "sub"), "status")
	if m := w.marks(marks); len(m) != 0 {
		t.Errorf("the host ran what the sandbox planted in its read-write mounts: %v", m)
	}
	// With the walk of the mounts off (a test build), the plants stay: the test proves
	// the walk.
	w.withProtectionOff(t, "audit-mounts")
	if r := w.sh(plant, "--profile", "libw"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, p := range []string{lib + "/.git/hooks/post-commit", lib + "/.envrc", notes + "/sub/.git", notes + "/.envrc"} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("with the walk of the mounts off %s is not left (the test proves nothing): %v", p, err)
		}
	}
}
