// Package dirlist keeps the listings of a tree's directories so that a later walk of the
// same tree lists again only the directories that changed: the protected set's scan,
// the audit's snapshot before the run and its snapshot after each read the whole tree,
// and in a tree of thousands of directories the listing (open, getdents, close) was most
// of their time, where one lstat tells an unchanged directory.
//
// Why an unchanged stamp proves an unchanged listing: every change to a directory's
// entries (create, link, unlink, rename in or out, mkdir, rmdir, mknod, symlink) sets its
// change time to the kernel's clock, and no process can set a change time back (utimes
// sets it to now). A listing is kept only when the directory's change time, read on the
// open directory before it was read, lies more than Margin before the coarse clock read
// before the walk began (Cache.since): every change after that moment is stamped at
// least since minus the filesystem's granularity (at most a second for those trusted),
// so later than the stamp kept. A directory is reused only when its device, inode and
// change time are those kept: it may have had no change since its listing was read.
// Only local filesystems that keep times this way are trusted (ext2/3/4, XFS, Btrfs,
// tmpfs); elsewhere (NFS, FUSE, 9p, overlay) every directory is listed every time.
// Only listings are kept, never a file's content: the walks read every config and hook
// as before.
package dirlist

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Margin is the least age of a directory's last change for its listing to be kept: the
// coarsest timestamp granularity of the trusted filesystems (ext4 with 128-byte inodes
// stamps whole seconds).
const Margin = int64(time.Second)

// trustedFS are the filesystems (statfs f_type) whose directory change times are the
// kernel's clock at each change to their entries, at a granularity of Margin or finer.
// A switch, not a map built at every start of box (issue 24).
func trustedFS(fsType int64) bool {
	switch fsType {
	case unix.EXT4_SUPER_MAGIC, // ext2, ext3, ext4
		unix.XFS_SUPER_MAGIC,
		unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// DisableStamps gives a kept listing back without checking that its directory is
// unchanged (a test build's switch, to show the drill's protect:stale-listing row catch
// a cache that trusts its listings).
var DisableStamps bool

// Ent is one entry of a listing: its name and getdents' type (DT_*; a lister that
// could not tell keeps DT_UNKNOWN).
type Ent struct {
	Name string
	Type uint8
}

// Stamp is what a kept listing is keyed on.
type Stamp struct {
	dev, ino uint64
	ctime    int64
	keep     bool // trusted filesystem, changed more than Margin before since
}

type listing struct {
	st   Stamp
	ents []Ent
}

// Cache is one walk's listings, for the next walk. The nil Cache keeps nothing.
type Cache struct {
	since   int64
	dirs    map[string]listing
	trusted map[uint64]bool // by device
	// base is the cache this walk's came after (New's prev): what it did not visit
	// itself (the scan enters no node_modules, the audit's walks do) is asked there.
	base *Cache
	// ahead is the look-ahead at the stamps this walk reuses listings by (Ahead).
	ahead *ahead
}

// New starts a cache for a walk beginning now; prev's listings (a walk before) that
// are still valid are carried over as the walk finds them (Reuse).
func New(prev *Cache) *Cache {
	c := &Cache{since: coarseNow(), dirs: make(map[string]listing, prev.Len()), trusted: map[uint64]bool{}, base: prev}
	if prev != nil {
		for d, ok := range prev.trusted {
			c.trusted[d] = ok
		}
	}
	return c
}

// newAt is New with since given (tests: a tree made just now is old for them).
func newAt(since int64) *Cache {
	return &Cache{since: since, dirs: map[string]listing{}, trusted: map[uint64]bool{}}
}

// Stat is the stamp of the open directory fd, taken before it is read.
func (c *Cache) Stat(fd int) Stamp {
	if c == nil {
		return Stamp{}
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return Stamp{}
	}
	ok, known := c.trusted[st.Dev]
	if !known {
		var sf unix.Statfs_t
		ok = unix.Fstatfs(fd, &sf) == nil && trustedFS(int64(sf.Type))
		c.trusted[st.Dev] = ok
	}
	s := Stamp{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano()}
	s.keep = ok && s.ctime < c.since-Margin
	return s
}

// Put keeps dir's whole listing ents, read from a descriptor stamped st (Stat, before
// reading), when st allows it. ents is copied.
func (c *Cache) Put(dir string, st Stamp, ents []Ent) {
	if c == nil || !st.keep || st.ctime >= c.since-Margin {
		return
	}
	c.dirs[dir] = listing{st, append([]Ent(nil), ents...)}
}

// Reuse is dir's listing kept in c when dir is still the directory it was read from,
// unchanged since (its device, inode and change time), and then keeps it in next too
// (nil: nowhere). ok false: list it. The lstat that tells is next's look-ahead's when it
// took one (Ahead), else taken now.
func (c *Cache) Reuse(dir string, next *Cache) (ents []Ent, ok bool) {
	if c == nil {
		return nil, false
	}
	l, found := c.dirs[dir]
	if !found && c.base != nil {
		l, found = c.base.dirs[dir] // one level: the walk before this one's
	}
	if !found {
		return nil, false
	}
	if !DisableStamps {
		var a *ahead
		if next != nil {
			a = next.ahead
		}
		if st := a.stat(c, dir); !st.ok || st.dev != l.st.dev || st.ino != l.st.ino || st.ctime != l.st.ctime {
			return nil, false
		}
	}
	if next != nil && next != c && l.st.ctime < next.since-Margin {
		next.dirs[dir] = l // read-only from here on: shared
	}
	return l.ents, true
}

// Len is how many listings c keeps.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	return len(c.dirs)
}

// coarseNow is the clock filesystems stamp inodes with (it may lag the fine one by a
// tick, never lead it).
func coarseNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return 0 // keeps nothing: no stamp is below 0 - Margin
	}
	return ts.Nano()
}

// WaitOlder waits, at most within, until every directory under root (links not
// followed) was last changed more than Margin before the clock filesystems stamp with:
// from then on a walk keeps their listings. A tree the operator works in is that old;
// one just made (a test's, the drill's fixture) is not.
func WaitOlder(root string, within time.Duration) error {
	var newest int64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err == nil && d.IsDir() && unix.Lstat(p, &st) == nil {
			newest = max(newest, st.Ctim.Nano())
		}
		return nil
	})
	for deadline := time.Now().Add(within); coarseNow() <= newest+Margin+int64(10*time.Millisecond); {
		if time.Now().After(deadline) {
			return fmt.Errorf("the clock did not pass the change times under %s within %v", root, within)
		}
		time.Sleep(20 * time.Millisecond) // the clock is what is waited for: nothing signals it
	}
	return nil
}

// ahead is a walk's look-ahead at the stamps of the directories a cache keeps listings
// of (Cache.Ahead): another thread lstats them while the walk goes on, and Reuse takes
// its answer when it has one, else lstats as before.
type ahead struct {
	of    *Cache // the cache whose listings are checked
	idx   map[string]int
	dirs  []string
	state []atomic.Uint32 // aheadFree, aheadTaken, aheadDone
	st    []aheadStat
	stop  atomic.Bool
}

const (
	aheadFree = iota
	aheadTaken
	aheadDone
)

// aheadStat is one lstat's answer: ok, a directory, with its device, inode and change time.
type aheadStat struct {
	dev, ino uint64
	ctime    int64
	ok       bool
}

// Ahead starts stamping, on another thread, the directories prev keeps listings of (its
// own and its base's), for this cache's walk, which reuses them (prev.Reuse(dir, c)):
// on a machine with a core to spare, the walk's one lstat per reused directory (most
// of its time in a big tree) runs beside it. Each answer is an lstat taken after the
// walk began, so no less fresh than one taken when the walk reaches the directory would
// have been at the moment it was taken: a walk is no atomic look at the tree, only its
// directories' lstats move earlier within it. stop ends the look-ahead (call it when
// the walk ends; Reuse lstats what it did not reach).
func (c *Cache) Ahead(prev *Cache) (stop func()) {
	if c == nil || prev == nil || DisableStamps || prev.Len()+prev.base.Len() < aheadMin {
		return func() {}
	}
	a := &ahead{of: prev, idx: make(map[string]int, prev.Len()+prev.base.Len())}
	for _, m := range []*Cache{prev, prev.base} {
		if m == nil {
			continue
		}
		for d := range m.dirs {
			if _, ok := a.idx[d]; !ok {
				a.idx[d] = len(a.dirs)
				a.dirs = append(a.dirs, d)
			}
		}
	}
	a.state = make([]atomic.Uint32, len(a.dirs))
	a.st = make([]aheadStat, len(a.dirs))
	c.ahead = a
	go func() {
		// From the end, where the walk comes last: the two meet once, in the middle.
		for i := len(a.dirs) - 1; i >= 0 && !a.stop.Load(); i-- {
			if a.state[i].CompareAndSwap(aheadFree, aheadTaken) {
				a.st[i] = lstatDir(a.dirs[i])
				a.state[i].Store(aheadDone)
			}
		}
	}()
	return func() { a.stop.Store(true) }
}

// aheadMin is the least number of listings worth another thread.
const aheadMin = 64

// lstatDir is dir's lstat, as Reuse checks it.
func lstatDir(dir string) aheadStat {
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return aheadStat{}
	}
	return aheadStat{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano(), ok: true}
}

// stat is dir's lstat: the look-ahead's answer when it has one for c's listings, else
// taken now.
func (a *ahead) stat(c *Cache, dir string) aheadStat {
	if a != nil && a.of == c {
		if i, ok := a.idx[dir]; ok {
			if a.state[i].Load() == aheadDone {
				return a.st[i]
			}
			a.state[i].CompareAndSwap(aheadFree, aheadTaken) // spares the other thread
		}
	}
	return lstatDir(dir)
}
