package postrun

import (
	"os"
	"path/filepath"
	"testing"
)

// The snapshot's realDir (parents resolved first, one lstat per directory) answers as
// realDir (EvalSymlinks of the whole directory) for plain directories, absent ones, a
// file where a directory is looked for, links (absolute, relative, with "..", chained,
// dangling) and paths below each.
func TestRealDirCachedIsEvalSymlinks(t *testing.T) {
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, "a/b/c"), 0o755)
	os.MkdirAll(filepath.Join(d, "x/y"), 0o755)
	os.WriteFile(filepath.Join(d, "a/file"), nil, 0o644)
	os.Symlink(filepath.Join(d, "x"), filepath.Join(d, "a/abs"))
	os.Symlink("../x/y", filepath.Join(d, "a/rel"))
	os.Symlink("abs", filepath.Join(d, "a/chain"))
	os.Symlink("nowhere", filepath.Join(d, "a/dangling"))
	os.Symlink("b/../../x", filepath.Join(d, "a/dotdot"))
	var paths []string
	for _, rel := range []string{"a/b/c/.envrc", "a/b/.envrc", "a/.envrc", "a/absent/.envrc", "a/absent/deeper/.envrc",
		"a/file/.envrc", "a/file/x/.envrc", "a/abs/.envrc", "a/abs/y/.envrc", "a/rel/.envrc", "a/chain/y/z/.envrc",
		"a/dangling/.envrc", "a/dotdot/y/.envrc", "a/b/c/../.envrc"} {
		paths = append(paths, filepath.Join(d, rel))
	}
	tk := &taker{}
	for round := 0; round < 2; round++ { // cold, then from what the first round remembered
		for _, p := range paths {
			if got, want := tk.realDir(p), realDir(p); got != want {
				t.Errorf("round %d: realDir(%s) = %s, EvalSymlinks says %s", round, p, got, want)
			}
		}
	}
}
