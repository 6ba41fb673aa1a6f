package postrun

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A linked worktree's gitdir or a commondir the run wrote that leads the host's git out of
// the writable roots is a finding, and moving it aside leaves the host's git nothing to
// follow; one git worktree add writes is none.
func TestAuditGitPointers(t *testing.T) {
	wd, outside := t.TempDir(), t.TempDir()
	gd := filepath.Join(wd, ".git")
	for _, d := range []string{"objects", "refs/heads", "worktrees/ok"} {
		os.MkdirAll(filepath.Join(gd, d), 0o755)
	}
	os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(gd, "config"), []byte("[core]\n\tbare = false\n"), 0o644)
	in := Input{Workdir: wd}
	before := Take(in)
	write := func(rel, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(gd, rel)), 0o755)
		os.WriteFile(filepath.Join(gd, rel), []byte(s), 0o644)
	}
	write("worktrees/ok/HEAD", "ref: refs/heads/ok\n")
	write("worktrees/ok/commondir", "../..\n")
	write("worktrees/ok/gitdir", filepath.Join(wd, "ok", ".git")+"\n")
	write("worktrees/evil/HEAD", "ref: refs/heads/main\n")
	write("worktrees/evil/commondir", "../..\n")
	write("worktrees/evil/gitdir", filepath.Join(outside, ".git")+"\n")
	write("worktrees/far/HEAD", "ref: refs/heads/main\n")
	write("worktrees/far/commondir", outside+"\n")
	write("commondir", outside+"\n")
	r := Audit(before, Take(in), t.TempDir(), time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		rel, _ := filepath.Rel(wd, f.Path)
		got = append(got, f.Kind+" "+rel)
	}
	want := "gitpointer .git/commondir, gitpointer .git/worktrees/evil/gitdir, gitpointer .git/worktrees/far/commondir"
	if strings.Join(got, ", ") != want {
		t.Errorf("findings %q, want %q", got, want)
	}
	for _, p := range []string{"commondir", "worktrees/evil/gitdir", "worktrees/far/commondir"} {
		if _, err := os.Lstat(filepath.Join(gd, p)); err == nil {
			t.Errorf("%s still in place", p)
		}
	}
}

// Across file systems the quarantine keeps holes, and past its bound renames the finding
// aside where it is instead of copying it.
func TestQuarantineAcrossFilesystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "box-audit-")
	if err != nil {
		t.Fatal("no /dev/shm (a tmpfs) to move across:", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	var sf, tf syscall.Statfs_t
	qdir := t.TempDir()
	syscall.Statfs(shm, &sf)
	syscall.Statfs(qdir, &tf)
	if sf.Type == tf.Type {
		t.Fatalf("/dev/shm and %s are one kind of file system: no cross-file-system move to test", qdir)
	}
	in := Input{Workdir: shm}
	before := Take(in)
	mk := func(name string) string {
		gd := filepath.Join(shm, name, ".git")
		os.MkdirAll(filepath.Join(gd, "objects"), 0o755)
		os.MkdirAll(filepath.Join(gd, "refs"), 0o755)
		os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		return gd
	}
	sparse := filepath.Join(mk("sparse"), "big")
	f, _ := os.Create(sparse)
	f.Truncate(1 << 30)
	f.WriteAt([]byte("x"), 1<<29)
	f.Close()
	fat := filepath.Join(mk("fat"), "blob")
	os.WriteFile(fat, make([]byte, 2<<20), 0o644)
	old := CopyLimit
	CopyLimit = 1 << 20
	t.Cleanup(func() { CopyLimit = old })
	r := Audit(before, Take(in), qdir, time.Now())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 2 || len(r.Beside) != 1 {
		t.Fatalf("findings %+v beside %q", r.Findings, r.Beside)
	}
	for _, f := range r.Findings {
		switch filepath.Base(filepath.Dir(f.Path)) {
		case "sparse":
			var st syscall.Stat_t
			if err := syscall.Stat(filepath.Join(f.Kept[0], "big"), &st); err != nil || st.Size != 1<<30 || st.Blocks*512 > 1<<20 {
				t.Errorf("the sparse file's copy: size %d, %d bytes on disk (%v)", st.Size, st.Blocks*512, err)
			}
		case "fat":
			if !strings.HasPrefix(filepath.Base(f.Kept[0]), ".box-quarantined-") || filepath.Dir(f.Kept[0]) != filepath.Join(shm, "fat") {
				t.Errorf("past the bound: kept at %s", f.Kept[0])
			}
		}
	}
}
