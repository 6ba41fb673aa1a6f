package postrun

import (
	"bytes"
	"encoding/binary"
	"io/fs"

	"golang.org/x/sys/unix"
)

// The walk lists directories with getdents on a plain descriptor: os.Open adds fcntl
// calls and a refused epoll registration to every directory, which over a tree of
// thousands of directories, walked before and after every run, was much of the audit's
// system time.

type dirent struct {
	name string
	dir  bool // a directory, never a link to one
}

// openDir opens dir for listing (following a link, as os.Open does: the walk enters
// only entries the listing calls directories, and the working directory itself).
func openDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// readDirents reads the next buffer of fd's entries ("." and ".." left out); nil and no
// error at the end. An entry whose type the filesystem does not say is lstatted.
func readDirents(fd int, buf []byte) ([]dirent, error) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, nil
		}
		out := make([]dirent, 0, 32)
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			nm := string(name)
			if nm == "." || nm == ".." {
				continue
			}
			isDir := typ == unix.DT_DIR
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				isDir = unix.Fstatat(fd, nm, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
			}
			out = append(out, dirent{nm, isDir})
		}
		if len(out) > 0 {
			return out, nil
		}
		// a buffer of only "." and "..": read on
	}
}
