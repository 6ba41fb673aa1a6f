package bwrap

import (
	"os"
	"path/filepath"
	"testing"
)

// The Landlock mode's home is the sandbox's to change between runs: a directory on the
// way to a nested state directory's link (state_dir = ".config/agent") that it replaced
// with a symlink must not have box plant the link where that points, a directory of the
// real home (hostile review, session 8).
func TestLandlockHomeLinkNotThroughSymlink(t *testing.T) {
	inst, outside := t.TempDir(), t.TempDir()
	p := &Plan{Spec: Spec{InstanceDir: inst, StateDir: ".config/agent"}}
	home := filepath.Join(inst, LandlockHome)
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(home, ".config")); err != nil {
		t.Fatal(err)
	}
	if err := p.prepareLandlockHome(); err != nil {
		t.Fatalf("prepareLandlockHome: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("box wrote through the sandbox's symlink: %s holds %v", outside, ents)
	}

	// Without the symlink, the link is made, relative, in a directory of box's own.
	fresh := t.TempDir()
	p = &Plan{Spec: Spec{InstanceDir: fresh, StateDir: ".config/agent"}}
	if err := p.prepareLandlockHome(); err != nil {
		t.Fatalf("prepareLandlockHome: %v", err)
	}
	link := filepath.Join(fresh, LandlockHome, ".config", "agent")
	if got, err := os.Readlink(link); err != nil || got != "../../.config/agent" {
		t.Errorf("the state link: %q, %v", got, err)
	}
}
