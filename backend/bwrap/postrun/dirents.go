package postrun

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The walk lists directories with getdents on a plain descriptor: os.Open adds fcntl
// calls and a refused epoll registration to every directory, which over a tree of
// thousands of directories, walked before and after every run, was much of the audit's
// system time.

type dirent struct {
	name string
	dir  bool  // a directory, never a link to one
	typ  uint8 // what lstat says it is (DT_*), DT_UNKNOWN when not known
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

// openDirAt is openDir, by name from dir's open parent when there is one (parent -1:
// by its path).
func openDirAt(parent int, name, dir string) (int, error) {
	if parent < 0 {
		return openDir(dir)
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// readDirents reads the next buffer of fd's entries ("." and ".." left out); nil and no
// error at the end. An entry whose type the filesystem does not say is lstatted.
func readDirents(fd int, buf []byte) ([]dirent, error) {
	return readDirentsInto(fd, buf, make([]dirent, 0, 32))
}

// readDirentsInto is readDirents appending to out (empty: the walk reuses one slice).
func readDirentsInto(fd int, buf []byte, out []dirent) ([]dirent, error) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, nil
		}
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
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, nm, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					typ = uint8(st.Mode & unix.S_IFMT >> 12)
				}
			}
			out = append(out, dirent{nm, typ == unix.DT_DIR, typ})
		}
		if len(out) > 0 {
			return out, nil
		}
		// a buffer of only "." and "..": read on
	}
}

// names is a directory's listing: nil when it could not be read whole (unknown), an
// empty set when the directory is not there.
type names map[string]bool

// maxListed bounds a guard directory's listing kept in memory; a bigger one is not
// listed (its guards are lstatted one by one).
const maxListed = 4096

// absent reports whether p is known not to exist from one listing of its directory:
// the protected set names some eighty paths in every project directory, nearly all
// absent, and one getdents answers for all of them where an lstat each cost eighty
// system calls. Anything else (present, a directory box could not list) is stat's to
// judge, as before.
func (t *taker) absent(p string) bool {
	dir := filepath.Dir(p)
	ns, ok := t.listed[dir]
	if !ok {
		if d, known := t.dirs[dir]; known && d == "" {
			// This snapshot's resolveDir found dir not there (ENOENT, ENOTDIR, a
			// dangling link): opening it to list it would only fail the same way.
			ns = names{}
		} else {
			ns = listNames(dir)
		}
		if t.listed == nil {
			t.listed = map[string]names{}
		}
		t.listed[dir] = ns
	}
	return ns != nil && !ns[filepath.Base(p)]
}

// listNames lists dir (nil when it cannot be listed whole, names{} when it is not
// there).
func listNames(dir string) names {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return names{}
	}
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	ns := names{}
	buf := make([]byte, 8<<10)
	for {
		ents, err := readDirents(fd, buf)
		if err != nil || len(ns)+len(ents) > maxListed {
			return nil
		}
		if ents == nil {
			return ns
		}
		for _, e := range ents {
			ns[e.name] = true
		}
	}
}
