package dirbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

func testStamp(name string) Stamp {
	p, err := profiles.Load("default", "")
	if err != nil {
		panic(err)
	}
	t, err := templates.Load("blank", "")
	if err != nil {
		panic(err)
	}
	return Stamp{Name: name, Profile: p, Template: t, Network: "none", Workdir: "/srv/proj", Created: time.Unix(1e9, 0).UTC(), Origin: "mint"}
}

func newStore(t *testing.T) Store { return Store{Root: filepath.Join(t.TempDir(), "boxes")} }

func mustCreate(t *testing.T, s Store, name string) *Box {
	t.Helper()
	b, _, err := s.Create(testStamp(name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, p, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestCreateLookupList(t *testing.T) {
	s := newStore(t)
	b := mustCreate(t, s, "work")
	got, err := s.Lookup("work")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != b.ID || got.Workdir != "/srv/proj" || got.Profile.Name != "default" || got.Template.Name != "blank" {
		t.Errorf("lookup = %+v", got.Stamp)
	}
	for _, d := range []string{got.Home(), got.Instance()} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi, err)
		}
	}
	if _, _, err := s.Create(testStamp("work"), nil); !errors.As(err, new(*ExistsError)) {
		t.Errorf("second create: %v", err)
	}
	if _, err := s.Lookup("nope"); err != ErrNotFound {
		t.Errorf("missing: %v", err)
	}
	// Nothing half-made is left in the store: only the box.
	ents, _ := os.ReadDir(s.Root)
	if len(ents) != 1 || ents[0].Name() != "work" {
		t.Errorf("store holds %v", ents)
	}
}

// A directory that merely looks like a box is no box: Lookup refuses it, List leaves
// it out, Create does not take its name, and nothing in it is touched.
func TestLookalikesRefused(t *testing.T) {
	s := newStore(t)
	good := mustCreate(t, s, "good")
	stamp := read(filepath.Join(good.Dir, StampFile))
	mk := func(name string, files map[string]string) string {
		dir := filepath.Join(s.Root, name)
		for _, d := range []string{"state/home", "state/instance", "snapshots"} {
			os.MkdirAll(filepath.Join(dir, d), 0o700)
		}
		for f, c := range files {
			write(t, filepath.Join(dir, f), c)
		}
		write(t, filepath.Join(dir, "state/home/precious"), "mine")
		return dir
	}
	cases := map[string]string{
		"nostamp":   mk("nostamp", nil),
		"badmagic":  mk("badmagic", map[string]string{StampFile: strings.Replace(stamp, Magic, "box/other/1", 1)}),
		"wrongname": mk("wrongname", map[string]string{StampFile: stamp}),
		"garbage":   mk("garbage", map[string]string{StampFile: "{not json"}),
		"extrakey":  mk("extrakey", map[string]string{StampFile: strings.Replace(stamp, `"box":`, `"x": 1, "box":`, 1)}),
	}
	linked := mk("linked", nil)
	os.Symlink(filepath.Join(good.Dir, StampFile), filepath.Join(linked, StampFile))
	cases["linked"] = linked
	os.Symlink(good.Dir, filepath.Join(s.Root, "alias"))
	cases["alias"] = filepath.Join(s.Root, "alias")
	for name := range cases {
		_, err := s.Lookup(name)
		var nb *NotBoxError
		if !errors.As(err, &nb) {
			t.Errorf("%s: lookup = %v, want NotBoxError", name, err)
		}
		if _, _, err := s.Create(testStamp(name), nil); !errors.As(err, new(*ExistsError)) {
			t.Errorf("%s: create over it: %v", name, err)
		}
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Name != "good" {
		t.Errorf("list = %v, %v", list, err)
	}
	for name, dir := range cases {
		if name != "alias" && read(filepath.Join(dir, "state/home/precious")) != "mine" {
			t.Errorf("%s was touched", name)
		}
	}
}

func TestSnapshotRestoreClone(t *testing.T) {
	s := newStore(t)
	b := mustCreate(t, s, "work")
	write(t, filepath.Join(b.Home(), ".claude/.credentials.json"), "LOGIN-1")
	write(t, filepath.Join(b.Instance(), ".claude/history"), "h1")
	os.Symlink("/etc/passwd", filepath.Join(b.Home(), "link"))
	if _, err := b.TakeSnapshot("authed", time.Unix(2e9, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.TakeSnapshot("authed", time.Now()); !errors.As(err, new(*SnapshotExistsError)) {
		t.Errorf("same label twice: %v", err)
	}
	write(t, filepath.Join(b.Home(), ".claude/.credentials.json"), "LOGIN-2")
	write(t, filepath.Join(b.Home(), "later"), "x")

	c, _, err := s.Clone(b, "authed", Stamp{Name: "clone", Profile: b.Profile, Template: b.Template, Network: b.Network, Workdir: b.Workdir, Origin: "clone", OriginFrom: "work/authed"})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(c.Home(), ".claude/.credentials.json")); got != "LOGIN-1" {
		t.Errorf("clone has %q, want the snapshot's", got)
	}
	if _, err := os.Lstat(filepath.Join(c.Home(), "later")); !os.IsNotExist(err) {
		t.Errorf("clone has a file made after the snapshot")
	}
	if l, err := os.Readlink(filepath.Join(c.Home(), "link")); err != nil || l != "/etc/passwd" {
		t.Errorf("link copied as %q, %v", l, err)
	}
	if read(filepath.Join(c.Instance(), ".claude/history")) != "h1" {
		t.Error("clone lacks the instance state")
	}
	if c.ID == b.ID {
		t.Error("clone shares its source's id")
	}

	if _, err := b.Restore("nope"); !errors.As(err, new(*NoSnapshotError)) {
		t.Errorf("restore unknown: %v", err)
	}
	if _, err := b.Restore("authed"); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(b.Home(), ".claude/.credentials.json")); got != "LOGIN-1" {
		t.Errorf("restored %q", got)
	}
	if _, err := os.Lstat(filepath.Join(b.Home(), "later")); !os.IsNotExist(err) {
		t.Error("restore kept a later file")
	}
	snaps, _ := b.Snapshots()
	if len(snaps) != 1 || snaps[0].Name != "authed" {
		t.Errorf("snapshots %v", snaps)
	}
}

func TestLockAndRemove(t *testing.T) {
	s := newStore(t)
	b := mustCreate(t, s, "work")
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, filepath.Join(outside, "keep"), "k")
	os.Symlink(outside, filepath.Join(b.Home(), "out"))
	os.MkdirAll(filepath.Join(b.Home(), "locked/sub"), 0o700)
	os.Chmod(filepath.Join(b.Home(), "locked"), 0)

	unlock, err := b.Lock(false) // a sandbox runs
	if err != nil {
		t.Fatal(err)
	}
	if !b.Busy() {
		t.Error("not busy while a sandbox holds the lock")
	}
	if err := s.Remove(b); !errors.As(err, new(*BusyError)) {
		t.Errorf("rm while in use: %v", err)
	}
	if _, err := b.Restore("x"); err == nil {
		t.Error("restore of a missing snapshot while in use went through")
	}
	unlock()
	if err := s.Remove(b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(b.Dir); !os.IsNotExist(err) {
		t.Errorf("box dir still there: %v", err)
	}
	if read(filepath.Join(outside, "keep")) != "k" {
		t.Error("rm followed a link out of the box")
	}
	if ents, _ := os.ReadDir(s.Root); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// A session holds the box shared (rm refuses, a snapshot copies it live) and the session
// lock exclusive: a second session is a *SessionBusyError until the first ends.
func TestLockSession(t *testing.T) {
	s := newStore(t)
	b := mustCreate(t, s, "work")
	end, err := b.LockSession()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.LockSession(); !errors.As(err, new(*SessionBusyError)) || !errors.Is(err, backend.ErrBusy) {
		t.Errorf("a second session: %v", err)
	}
	if !b.Busy() {
		t.Error("not busy while a session runs")
	}
	if err := s.Remove(b); !errors.As(err, new(*BusyError)) {
		t.Errorf("rm during a session: %v", err)
	}
	if _, err := b.TakeSnapshot("live", time.Now()); err != nil {
		t.Errorf("a snapshot during a session: %v", err)
	}
	end()
	again, err := b.LockSession()
	if err != nil {
		t.Fatalf("a session after the first ended: %v", err)
	}
	again()
	if b.Busy() {
		t.Error("busy once every session ended")
	}
}

// A tree deeper than the open-file limit (os.RemoveAll holds a descriptor per level),
// with directories the sandbox locked (0 and 0500) on the way, is removed, and nothing
// outside it is touched through a link.
func TestRemoveDeepTree(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	write(t, filepath.Join(outside, "keep"), "k")
	dir := filepath.Join(t.TempDir(), "deep")
	p := dir
	for i := range 300 {
		p = filepath.Join(p, "d")
		if i == 150 {
			os.Symlink(outside, filepath.Join(p, "..", "out"))
		}
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(p, "f"), "x")
	os.Chmod(filepath.Dir(p), 0o500)
	os.Chmod(filepath.Dir(filepath.Dir(filepath.Dir(p))), 0)
	low := lim
	low.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	plain := os.RemoveAll(dir)
	err := removeAll(dir)
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	if plain == nil {
		t.Fatal("os.RemoveAll removed the tree within 64 descriptors: the test proves nothing")
	}
	if err != nil {
		t.Fatalf("removeAll: %v", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("still there: %v", err)
	}
	if read(filepath.Join(outside, "keep")) != "k" {
		t.Error("removal followed a link out of the tree")
	}
}

func TestRename(t *testing.T) {
	s := newStore(t)
	b := mustCreate(t, s, "old")
	mustCreate(t, s, "taken")
	if _, err := s.Rename(b, "taken"); !errors.As(err, new(*ExistsError)) {
		t.Errorf("onto a taken name: %v", err)
	}
	nb, err := s.Rename(b, "new")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Lookup("new"); err != nil || got.ID != b.ID || nb.Name != "new" {
		t.Errorf("after rename: %v %v", got, err)
	}
	if _, err := s.Lookup("old"); err != ErrNotFound {
		t.Errorf("old name: %v", err)
	}
}

func TestCopyTreePreserves(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "bin/tool"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(src, "bin/tool"), 0o750)
	os.Chmod(filepath.Join(src, "bin"), 0o500)
	os.Symlink("../../../etc/shadow", filepath.Join(src, "escape"))
	mt := time.Unix(1.5e9, 0)
	os.Chtimes(filepath.Join(src, "bin/tool"), mt, mt)
	dst := filepath.Join(t.TempDir(), "dst")
	st, err := CopyTree(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(dst, "bin"), 0o700)
	fi, err := os.Stat(filepath.Join(dst, "bin/tool"))
	if err != nil || fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(mt) {
		t.Errorf("tool: %v %v", fi, err)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "bin")); fi.Mode().Perm() != 0o500 {
		t.Errorf("bin mode %v", fi.Mode())
	}
	if l, _ := os.Readlink(filepath.Join(dst, "escape")); l != "../../../etc/shadow" {
		t.Errorf("link %q", l)
	}
	if st.Files != 1 || st.Links != 1 || st.Dirs != 2 {
		t.Errorf("stats %+v", st)
	}
	// The source itself must not be a link.
	os.Symlink(src, filepath.Join(t.TempDir(), "l"))
	if _, err := CopyTree(filepath.Join(filepath.Dir(dst), "nope"), filepath.Join(t.TempDir(), "d")); err == nil {
		t.Error("copied a missing tree")
	}
}

func TestCopyTreeRefusesLinkedRoot(t *testing.T) {
	base := t.TempDir()
	write(t, filepath.Join(base, "real/secret"), "s")
	os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link"))
	if _, err := CopyTree(filepath.Join(base, "link"), filepath.Join(base, "dst")); err == nil {
		t.Error("CopyTree followed a linked source root")
	}
}

// A box's sparse file and its hard links are not blown up by a copy (review finding,
// session 4: 12MiB in the box became 2.5GiB in its snapshot): holes stay holes, links
// stay links, and the bytes are the same.
func TestCopyTreeSparseAndHardLinks(t *testing.T) {
	src, dst := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "dst")
	os.MkdirAll(filepath.Join(src, "hl"), 0o755)
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("head"), 0)
	f.WriteAt([]byte("middle"), 512<<20)
	f.Truncate(2 << 30)
	f.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1MiB
	os.WriteFile(filepath.Join(src, "big"), big, 0o644)
	for i := range 20 {
		if err := os.Link(filepath.Join(src, "big"), filepath.Join(src, "hl", fmt.Sprintf("h%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	st, err := CopyTree(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hardlinked != 20 {
		t.Errorf("hardlinked %d, want 20", st.Hardlinked)
	}
	var used int64
	seen := map[uint64]bool{}
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if st := fi.Sys().(*syscall.Stat_t); !seen[st.Ino] {
			seen[st.Ino] = true
			used += st.Blocks * 512
		}
		return nil
	})
	if used > 16<<20 {
		t.Errorf("the copy takes %d MiB on disk, want about 1 (holes and links kept)", used>>20)
	}
	var a, b syscall.Stat_t
	syscall.Stat(filepath.Join(dst, "big"), &a)
	syscall.Stat(filepath.Join(dst, "hl", "h7"), &b)
	if a.Ino != b.Ino || a.Nlink != 21 {
		t.Errorf("big and hl/h7: inodes %d %d, links %d", a.Ino, b.Ino, a.Nlink)
	}
	got, _ := os.ReadFile(filepath.Join(dst, "hl", "h3"))
	if !bytes.Equal(got, big) {
		t.Error("a hard link's content differs")
	}
	s, err := os.Open(filepath.Join(dst, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, _ := s.Stat()
	head, mid := make([]byte, 4), make([]byte, 6)
	s.ReadAt(head, 0)
	s.ReadAt(mid, 512<<20)
	if fi.Size() != 2<<30 || string(head) != "head" || string(mid) != "middle" {
		t.Errorf("sparse copy: size %d, %q, %q", fi.Size(), head, mid)
	}
}

// A copy that fails on the box's own files is a CopyError, whose hint (cmd/box's
// TestRefusalHints) says what to do (review finding, session 4: "box: error: too many
// open files" alone, for a 12,000-level tree).
func TestCopyErrorIsTyped(t *testing.T) {
	// CopyTree's errors are CopyErrors: a source that is not a directory.
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	var ce *CopyError
	if _, err := CopyTree(f, filepath.Join(t.TempDir(), "d")); !errors.As(err, &ce) {
		t.Errorf("err = %T %v, want a *CopyError", err, err)
	}
}
