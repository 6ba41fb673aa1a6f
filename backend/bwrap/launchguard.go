package bwrap

// The launch guard (hostile review, sessions 13 and 14). bwrap makes and binds its mount
// points by path, following links, and box run's protected set is bound at its own paths
// inside the working directory, which another run's sandbox on the same tree writes
// while it runs. That sandbox can swap a directory on the way to a mount point (a nested
// repository's work tree, a directory it made) for a link, through bwrap's /oldroot, in
// a loop: box's checks see the directory, the second run's bwrap a moment later the
// link. The read-only bind then lands outside the sandbox's view (the nested repository
// stays writable inside), and a mount point that does not exist at the link's far end is
// made there, on the host. The same sandbox can hide a path from the second run's scan
// (rename it away while the scan passes): no check made while another sandbox on the
// tree is alive can be trusted.
//
// A run therefore holds its tree from before its scan until its sandbox and audit have
// ended, and a run whose tree is the same, inside it or around it waits (never refuses),
// saying for which run. The hold is a lock on the directories themselves, not on their
// names: an exclusive flock on the tree's directory and a shared one on each ancestor that
// could be another run's tree, taken from the top down (so two runs never wait for each
// other in a circle). A name would miss the same tree under another one (a link swapped
// into the path, a bind mount of the project elsewhere: seen in the review of a guard by
// path), and a file of records would be state a refused run leaves behind. The tree's
// path is the kernel's for the directory held (never $PWD resolved again), read again
// once held: a sandbox that moved it before it ended sends the run round again.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/heavy-duty/box/internal/rawread"
	"github.com/heavy-duty/box/internal/shellquote"
	"github.com/heavy-duty/box/internal/termtext"
	"golang.org/x/sys/unix"
)

// ProtLaunchGuard names the launch guard (switched off only in a test build, so the
// drill can show a second run's bwrap following a link the first run's sandbox swaps in).
const ProtLaunchGuard = "launch-guard"

// guardTries bounds the rounds of a run whose directory a sandbox kept moving.
const guardTries = 3

// TreeMovedError: the working directory's path changed while the run waited for its
// tree (a sandbox on it moved it, or a box's directory is now reached through a link).
type TreeMovedError struct{ Tree, Now string }

func (e *TreeMovedError) Error() string {
	return fmt.Sprintf("launch guard: the working directory %s changed while this run waited for its tree (it is now %s): not launched", termtext.Escape(e.Tree, false), termtext.Escape(e.Now, false))
}

// GuardLockError: a lock of the guard could not be taken (a filesystem without flock).
type GuardLockError struct {
	Dir string
	Err error
}

func (e *GuardLockError) Error() string {
	return fmt.Sprintf("launch guard: cannot lock %s: %v", termtext.Escape(e.Dir, false), e.Err)
}
func (e *GuardLockError) Unwrap() error { return e.Err }

// MountHeldError: a read-write mount of the run is another live run's tree (its working
// directory, inside or around it, or a read-write mount of its own). Two sandboxes
// writing one tree at once can each hide what the other plants from its own audit: a
// hostile review (session 18) planted a repository from a run in ~/src/lib, which a run
// in ~/src/app2 mounting ~/src/lib read-write hid while the first run's audit looked and
// put back after, where its own audit had seen it at its start; the host's git commit in
// it ran the planted hook, and neither audit said a word.
type MountHeldError struct{ Mount, Holder string }

func (e *MountHeldError) Error() string {
	return fmt.Sprintf("launch guard: the read-write mount %s is in use by %s: two sandboxes writing one tree at once can hide what each plants from the other's audit: not launched", termtext.Escape(e.Mount, false), e.Holder)
}

// MountAroundError: a read-write mount holds the run's own working directory, so the
// whole mount is the tree the run writes, and the guard holds the working directory.
type MountAroundError struct{ Mount, Workdir string }

func (e *MountAroundError) Error() string {
	return fmt.Sprintf("launch guard: the read-write mount %s holds the working directory %s: the run writes the whole mount, which box holds only as a working directory: not launched", termtext.Escape(e.Mount, false), termtext.Escape(e.Workdir, false))
}

// guardMounts holds each read-write directory mount of p (whose working directory is
// tree, held) as a tree too, for as long as the run, so no other run's sandbox writes it
// meanwhile. It never waits: while this run holds its own tree, waiting for another's
// could wait in a circle with a run waiting for this one; a mount held by another run
// refuses the launch, saying which. A mount inside the working directory is the tree's
// own lock's.
func (s *Session) guardMounts(p *Plan, tree string) (func(), error) {
	if protectionOff(ProtLaunchGuard) || tree == "" {
		return func() {}, nil
	}
	home := resolved(s.Outside.Home)
	var held []func()
	release := func() {
		for _, r := range held {
			r()
		}
	}
	var own []string // the mounts held so far
	for _, m := range p.Spec.Mounts {
		switch {
		case !m.RW || within(m.Src, tree) || slices.ContainsFunc(own, func(o string) bool { return within(m.Src, o) }):
			continue
		case within(tree, m.Src):
			release()
			return nil, &MountAroundError{Mount: m.Src, Workdir: tree}
		}
		fd, err := unix.Open(m.Src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) {
			continue // a file: the launch warns of a read-write one
		}
		if err != nil {
			release()
			return nil, &GuardLockError{Dir: m.Src, Err: err}
		}
		dir := os.NewFile(uintptr(fd), m.Src)
		r, err := holdTreeNow(dir, m.Src, home, append([]string{tree}, own...))
		if err != nil {
			dir.Close()
			release()
			return nil, err
		}
		held, own = append(held, r), append(own, m.Src)
	}
	return release, nil
}

// holdTreeNow is holdTree without waiting: a lock another run holds is a MountHeldError.
// Ancestors that are trees this run holds already (mine) are left alone: their own
// locks cover them.
func holdTreeNow(dir *os.File, tree, home string, mine []string) (func(), error) {
	above, err := ancestorsOf(tree, home)
	if err != nil {
		return nil, err
	}
	var held []*os.File
	release := func() {
		for _, f := range held {
			f.Close()
		}
	}
	take := func(f *os.File, name string, how int) error {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return &MountHeldError{Mount: tree, Holder: holderOf(f, name, tree)}
		}
		return &GuardLockError{Dir: name, Err: err}
	}
	for _, a := range above {
		if slices.ContainsFunc(mine, func(m string) bool { return within(a, m) }) {
			continue
		}
		fd, err := unix.Open(a, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // as holdTree
		}
		f := os.NewFile(uintptr(fd), a)
		if err := take(f, a, unix.LOCK_SH); err != nil {
			f.Close()
			release()
			return nil, err
		}
		held = append(held, f)
	}
	if err := take(dir, tree, unix.LOCK_EX); err != nil {
		release()
		return nil, err
	}
	held = append(held, dir)
	return release, nil
}

// guardTree holds the tree r runs in (the working directory, or a persistent box's) and
// returns its path as held, for the run to use as is (Request.Tree).
func (s *Session) guardTree(r Request) (string, func(), error) {
	if protectionOff(ProtLaunchGuard) {
		return "", func() {}, nil
	}
	home := resolved(s.Outside.Home)
	for try := 1; ; try++ {
		dir, tree, err := openTree(r)
		if err != nil {
			return "", nil, err
		}
		release, err := holdTree(dir, tree, home, s.Stderr)
		if err != nil {
			dir.Close()
			return "", nil, err
		}
		now, err := kernelPath(dir)
		if err == nil && now == tree && (r.Persistent == nil || now == filepath.Clean(r.Persistent.Workdir)) {
			return tree, release, nil
		}
		release()
		if err != nil {
			return "", nil, err
		}
		if r.Persistent != nil {
			// The box is bound to its directory by name, as box new resolved it.
			return "", nil, &TreeMovedError{Tree: r.Persistent.Workdir, Now: now}
		}
		if try == guardTries {
			return "", nil, &TreeMovedError{Tree: tree, Now: now}
		}
	}
}

// WaitQuiet waits until no run's sandbox lives in the working directory's tree (held as
// guardTree holds it, then let go), for what is made in the tree before a run: a run
// already under way when it is made takes it for its sandbox's doing. The drill's
// fixture was moved aside by such a run's post-run audit, and the drill said BREACH on
// 65 rows of a sound sandbox (field review, session 20; TestDrillWaitsForRunOnTree). A
// run that starts after it finds the made thing in its own "before".
func (s *Session) WaitQuiet() error {
	if protectionOff(ProtLaunchGuard) {
		return nil
	}
	dir, tree, err := openTree(Request{})
	if err != nil {
		return err
	}
	release, err := holdTree(dir, tree, resolved(s.Outside.Home), s.Stderr)
	if err != nil {
		dir.Close()
		return err
	}
	release()
	return nil
}

// openTree opens the directory r runs in and reads its kernel path.
func openTree(r Request) (*os.File, string, error) {
	name := "."
	if r.Persistent != nil {
		name = r.Persistent.Workdir
	}
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &GatherError{fmt.Errorf("working directory: %w", &os.PathError{Op: "open", Path: name, Err: err})}
	}
	dir := os.NewFile(uintptr(fd), name)
	tree, err := kernelPath(dir)
	if err != nil {
		dir.Close()
		return nil, "", err
	}
	return dir, tree, nil
}

// kernelPath is the path the kernel gives the open directory dir; one it no longer has
// (removed) is an error.
func kernelPath(dir *os.File) (string, error) {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(dir.Fd())))
	if err == nil && (!filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)")) {
		err = errors.New("it was removed")
	}
	if err != nil {
		return "", &GatherError{fmt.Errorf("working directory: %w", err)}
	}
	return p, nil
}

// holdTree locks tree (open as dir) exclusive and its ancestors that could be a run's
// tree shared, waiting for the runs that hold them. It owns dir. The exclusive lock is
// taken last, so a run waits only while it holds shared locks, which never stop another
// run's: two runs never wait for each other in a circle, whatever the order.
func holdTree(dir *os.File, tree, home string, stderr io.Writer) (func(), error) {
	above, err := ancestorsOf(tree, home)
	if err != nil {
		return nil, err
	}
	var self unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &self); err != nil {
		return nil, &GuardLockError{Dir: tree, Err: err}
	}
	var held []*os.File
	release := func() {
		for _, f := range held {
			f.Close() // the lock goes with the last descriptor
		}
	}
	for _, a := range above {
		fd, err := unix.Open(a, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			// No run can hold what it cannot open; a link in the way is checked above
			// it (the tree's path is read again once held).
			continue
		}
		f := os.NewFile(uintptr(fd), a)
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Dev == self.Dev && st.Ino == self.Ino {
			f.Close() // the tree itself under another name: its own lock covers it
			continue
		}
		if err := lockDir(f, a, unix.LOCK_SH, tree, stderr); err != nil {
			f.Close()
			release()
			return nil, err
		}
		held = append(held, f)
	}
	if err := lockDir(dir, tree, unix.LOCK_EX, tree, stderr); err != nil {
		release()
		return nil, err
	}
	held = append(held, dir)
	return release, nil
}

// ancestorsOf lists the directories above tree that could be another run's tree (below
// what CheckWorkdir refuses), farthest first: those of its path, and, when tree lies in a
// bind mount of a directory (the operator's alias of a project, a container's volume),
// those above that directory in the filesystem, by the names another mount of it gives
// them here. A run in an alias of /proj/sub then meets a run in /proj.
func ancestorsOf(tree, home string) ([]string, error) {
	mounts, err := mountTable()
	if err != nil {
		return nil, err
	}
	return ancestorsIn(tree, home, mounts), nil
}

// ancestorsIn is ancestorsOf with the mount table given.
func ancestorsIn(tree, home string, mounts []mount) []string {
	var near []string // nearest first
	seen := map[string]bool{}
	add := func(d string) {
		for ; CheckWorkdir(d, home) == nil && !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			near = append(near, d)
		}
	}
	add(filepath.Dir(tree))
	if m := mountOf(mounts, tree); m != nil && m.root != "/" {
		inFS := filepath.Join(m.root, strings.TrimPrefix(tree, m.point))
		for x := filepath.Dir(inFS); ; x = filepath.Dir(x) {
			for _, n := range mounts {
				if n.dev == m.dev && (n.root == "/" || x == n.root || strings.HasPrefix(x, n.root+"/")) {
					add(filepath.Join(n.point, strings.TrimPrefix(x, strings.TrimSuffix(n.root, "/"))))
				}
			}
			if x == "/" {
				break
			}
		}
	}
	slices.Reverse(near)
	return near
}

// mount is a line of /proc/self/mountinfo: the filesystem (major:minor), the directory of
// it mounted (root) and where (point).
type mount struct{ dev, root, point string }

// MountTableError: /proc/self/mountinfo did not read, so the tree's other names are unknown.
type MountTableError struct{ Err error }

func (e *MountTableError) Error() string {
	return fmt.Sprintf("launch guard: the mount table (/proc/self/mountinfo): %v", e.Err)
}
func (e *MountTableError) Unwrap() error { return e.Err }

func mountTable() ([]mount, error) {
	b, err := rawread.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, &MountTableError{err}
	}
	var ms []mount
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		ms = append(ms, mount{f[2], unescapeMountinfo(f[3]), unescapeMountinfo(f[4])})
	}
	if len(ms) == 0 {
		return nil, &MountTableError{errors.New("empty")}
	}
	return ms, nil
}

// mountOf is the mount tree lies on: the longest mount point above it, the last mounted
// of those at one point (the one on top).
func mountOf(ms []mount, tree string) *mount {
	var on *mount
	for i := range ms {
		m := &ms[i]
		if (m.point == "/" || tree == m.point || strings.HasPrefix(tree, m.point+"/")) && (on == nil || len(m.point) >= len(on.point)) {
			on = m
		}
	}
	return on
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space, and so on).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// lockDir takes how on f (the directory name), saying once for which run it waits.
func lockDir(f *os.File, name string, how int, tree string, stderr io.Writer) error {
	err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return &GuardLockError{Dir: name, Err: err}
	}
	fmt.Fprintf(stderr, "box: waiting for %s to end: a sandbox running on this tree could change it under this run's checks and mounts\n", holderOf(f, name, tree))
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINTR) {
			return &GuardLockError{Dir: name, Err: err}
		}
	}
}

// holderOf names, as well as /proc says, the run holding a lock on f: its pid, its
// command line and its directory, escaped (another process's words).
func holderOf(f *os.File, name, tree string) string {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "another run on this tree"
	}
	pid := lockHolder(readProcLocks(), st)
	if pid <= 0 {
		return "another run on this tree (or another process holding a lock on " + termtext.Escape(name, false) + ")"
	}
	cmd := "?"
	if b, err := rawread.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
		cmd = commandText(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
	}
	where := "in this directory"
	if name != tree {
		where = "in " + name
	} else if cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd"); err == nil && strings.HasPrefix(cwd, tree+"/") {
		where = "in " + cwd // a run inside this tree holds its part of it
	}
	return fmt.Sprintf("the run of pid %d (%s) %s", pid, termtext.Escape(cmd, false), termtext.Escape(where, false))
}

func readProcLocks() string {
	b, _ := rawread.ReadFile("/proc/locks")
	return string(b)
}

// lockHolder finds in locks (/proc/locks) a pid holding a flock on the inode st; 0 when
// none shows (a process in another pid namespace shows as -1 or not at all).
func lockHolder(locks string, st unix.Stat_t) int {
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for _, line := range strings.Split(locks, "\n") {
		// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:131 0 EOF" ("->" before a waiter's)
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != id {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// commandText is argv as a shell would read it, shortened, for the waiting run's message.
func commandText(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellquote.Quote(a)
	}
	s := strings.Join(q, " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
