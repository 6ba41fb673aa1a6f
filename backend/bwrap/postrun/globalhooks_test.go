package postrun

import (
	"os"
	"path/filepath"
	"testing"
)

// An absolute global core.hooksPath in the working directory holds the hooks of every
// repository on the host: a hook the run adds there is a finding even where the working
// directory is no repository (the Landlock mode, where nothing is read-only; a hostile
// review, session 18, planted one and the host's next git checkout ran it).
func TestAuditGlobalHooksPathNoRepo(t *testing.T) {
	home := t.TempDir()
	wd := filepath.Join(home, "cfg")
	os.MkdirAll(filepath.Join(wd, "hooks"), 0o755)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = ~/cfg/hooks\n"), 0o644)
	in := Input{Workdir: wd, Home: home, Writable: []string{wd}}
	before := Take(in)
	os.WriteFile(filepath.Join(wd, "hooks", "post-checkout"), []byte("#!/bin/sh\nid\n"), 0o755)
	for _, f := range Diff(before, Take(in)) {
		if f.Kind == FindFile && f.Path == filepath.Join(wd, "hooks", "post-checkout") {
			return
		}
	}
	t.Fatal("a hook added to the global hooks path is no finding")
}
