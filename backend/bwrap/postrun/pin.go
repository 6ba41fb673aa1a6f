package postrun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The audit writes (modes, moves, rewritten configs) in a tree another sandbox may still
// be writing: a concurrent run on the same directory, or a run whose working directory
// encloses this one. Such a sandbox can swap a directory on the audit's path for a
// symbolic link between box's check and its write, and send the write to any path of
// the operator's (a chmod on ~/.ssh, a config written as ~/.ssh/config). So every write
// goes through a pinned path: the parent directory is opened with openat2's
// RESOLVE_NO_SYMLINKS (no link anywhere on the way: the tree's roots are canonical, see
// Gather) and the write names the entry through that open directory
// (/proc/self/fd/N/BASE), where a later swap cannot reach.

// pinned is a path whose parent is held open.
type pinned struct {
	fd   int
	Path string // /proc/self/fd/N/BASE
	Dir  string // /proc/self/fd/N
}

// pinParent opens p's parent without following links and returns p through it.
func pinParent(p string) (pinned, error) {
	dir, base := filepath.Split(filepath.Clean(p))
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return pinned{fd: -1}, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := "/proc/self/fd/" + strconv.Itoa(fd)
	return pinned{fd: fd, Dir: d, Path: d + "/" + base}, nil
}

func (x pinned) close() {
	if x.fd >= 0 {
		unix.Close(x.fd)
	}
}

// chmodNoFollow sets p's mode unless p (or anything on its way) is a link; it returns
// p's mode before, and whether it was a link (left alone).
func chmodNoFollow(p string, mode func(before fs.FileMode) (fs.FileMode, bool)) (before fs.FileMode, link bool, err error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err == unix.ELOOP {
		return 0, true, nil // p, or a directory on its way, is a link now
	}
	if err != nil {
		return 0, false, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, false, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	before = fileMode(st.Mode)
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return before, true, nil
	}
	m, change := mode(before)
	if !change {
		return before, false, nil
	}
	// chmod through the open descriptor: the very inode checked above.
	if err := os.Chmod("/proc/self/fd/"+strconv.Itoa(fd), m); err != nil {
		return before, false, &fs.PathError{Op: "chmod", Path: p, Err: unwrapPath(err)}
	}
	return before, false, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// fileMode is a stat mode as an fs.FileMode (permission, special bits, type).
func fileMode(m uint32) fs.FileMode {
	out := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		out |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		out |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		out |= fs.ModeSticky
	}
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		out |= fs.ModeDir
	case unix.S_IFLNK:
		out |= fs.ModeSymlink
	}
	return out
}

// readRegularNoFollow is readRegular for a path that must not be a link (pinned paths).
func readRegularNoFollow(p string, max int64) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return readOpen(f, p, max)
}

// named words err of an operation on a pinned path with the path the user knows.
func named(err error, p string) error {
	var le *os.LinkError
	var pe *fs.PathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le):
		return &fs.PathError{Op: le.Op, Path: p, Err: le.Err}
	case errors.As(err, &pe):
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return err
}
