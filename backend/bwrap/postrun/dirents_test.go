package postrun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The snapshot's shortcuts answer as the system calls they replace: realDir resolved
// once per directory is realDir, and a path absent from its directory's listing is one
// lstat finds absent (what the listing cannot tell is left to lstat).
func TestSnapshotShortcutsAgree(t *testing.T) {
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, "real", "sub"), 0o755)
	os.WriteFile(filepath.Join(d, "real", ".envrc"), nil, 0o644)
	os.WriteFile(filepath.Join(d, "file"), nil, 0o644)
	os.Symlink(filepath.Join(d, "real"), filepath.Join(d, "link"))
	os.Symlink("nowhere", filepath.Join(d, "real", "dangling"))
	var tk taker
	for range 2 { // the second time from the caches
		for _, p := range []string{
			filepath.Join(d, "real", ".envrc"), filepath.Join(d, "real", ".mise.toml"),
			filepath.Join(d, "link", ".envrc"), filepath.Join(d, "link", ".mise.toml"),
			filepath.Join(d, "real", "sub"), filepath.Join(d, "real", "dangling"),
			filepath.Join(d, "none", ".envrc"), filepath.Join(d, "file", ".envrc"),
			filepath.Join(d, "link", "sub", "x"),
		} {
			if got, want := tk.realDir(p), realDir(p); got != want {
				t.Errorf("realDir(%s) = %s, want %s", p, got, want)
			}
			_, err := os.Lstat(p)
			gone := errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
			if got := tk.absent(p); got != gone {
				t.Errorf("absent(%s) = %v, lstat says %v", p, got, err)
			}
		}
	}
}
