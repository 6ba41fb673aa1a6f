package bwrap

import (
	"os"
	"path/filepath"
	"testing"
)

// The agent's copy of the log is created fresh in the hostile instance directory: a
// planted link (to an operator file) is replaced, never written through, and a directory
// that is itself a link is refused.
func TestCreateInInstance(t *testing.T) {
	dir := t.TempDir()
	claude := filepath.Join(dir, ".claude")
	os.Mkdir(claude, 0o700)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("operator data\n"), 0o600)
	os.Symlink(victim, filepath.Join(claude, RefusalsFile))
	f, err := createInInstance(claude, RefusalsFile)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("line\n")
	f.Close()
	if b, _ := os.ReadFile(victim); string(b) != "operator data\n" {
		t.Errorf("written through the planted link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(claude, RefusalsFile)); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("not a fresh regular file: %v %v", fi, err)
	}
	link := filepath.Join(dir, "linked")
	os.Symlink(claude, link)
	if _, err := createInInstance(link, RefusalsFile); err == nil {
		t.Errorf("created through a directory link")
	}
}
