package bwrap

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/heavy-duty/box/backend/bwrap/protect"
	"github.com/heavy-duty/box/policy"
)

// The tree's reach record is written when it changes, and left alone (same inode, same
// bytes) when a run alone on the tree has the reach already recorded; what is not a
// regular file there is still healed.
func TestTreeReachRewrittenOnlyWhenChanged(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "tree.lock")
	settle := func(r Reach) {
		t.Helper()
		h, err := protect.Enter(lock)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Leave(nil)
		if !h.Alone() {
			t.Fatal("not alone on a fresh tree")
		}
		if err := settleTreeReach(h, lock, dir, r); err != nil {
			t.Fatal(err)
		}
	}
	ino := func() uint64 {
		t.Helper()
		fi, err := os.Lstat(treeReachFile(lock))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	none := Reach{Magic: reachMagic, Network: policy.NetNone}
	settle(none)
	first := ino()
	settle(none)
	if ino() != first {
		t.Error("an unchanged record was rewritten")
	}
	wider := Reach{Magic: reachMagic, Network: policy.NetNone, Env: []string{"GH_TOKEN"}}
	settle(wider)
	if got, err := readReachAt(treeReachFile(lock)); err != nil || len(got.Env) != 1 {
		t.Fatalf("a changed reach was not recorded: %+v, %v", got, err)
	}
	os.Remove(treeReachFile(lock))
	os.Mkdir(treeReachFile(lock), 0o700) // not a regular file: moved aside, then written
	settle(none)
	if fi, err := os.Lstat(treeReachFile(lock)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the record was not healed: %v", err)
	}
}
