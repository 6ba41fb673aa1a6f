package dirbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// CopyStats says what a copy did: how many files were cloned (reflinked) and how many
// copied byte by byte, with their total size, and what was left out.
type CopyStats struct {
	Dirs, Files, Links, Reflinked int
	Bytes                         int64
	Skipped                       []string // sockets and devices, relative to the source
	// Hardlinked are files copied as a hard link to an earlier copy (the source's were
	// one file under several names).
	Hardlinked int

	root  int                  // the destination root's fd, for hard links
	inode map[[2]uint64]string // a multiply linked source file -> its copy (root-relative)
}

// CopyTree copies the directory src to dst (which must not exist), preserving modes,
// user.* extended attributes and POSIX ACLs,
// modification times and symbolic links as links. Files are cloned where the file
// system can (FICLONE: btrfs, XFS, bcachefs...), else copied.
//
// src is written by a sandbox, possibly while the copy runs, so it is walked by file
// descriptor: every directory is opened relative to its parent with O_NOFOLLOW, every
// file with O_NOFOLLOW, so a directory swapped for a link mid-copy fails the copy
// instead of leading it out of the box. Hard links stay hard links and holes stay holes:
// a box's 10MiB under fifty names, or a 1TiB sparse file, would otherwise fill the host's
// disk at the next snapshot, restore or clone. A file is copied up to the size it had
// when opened (a sandbox appending to it cannot make the copy endless).
func CopyTree(src, dst string) (CopyStats, error) {
	st, err := copyTree(src, dst)
	if err != nil {
		err = &CopyError{Err: err}
	}
	return st, err
}

// CopyError is a copy that failed; the CLI's hint says what to do from inside the box
// when the box's own files are the cause (Err: too deep, unreadable, disk full).
type CopyError struct{ Err error }

func (e *CopyError) Error() string { return e.Err.Error() }
func (e *CopyError) Unwrap() error { return e.Err }

func copyTree(src, dst string) (CopyStats, error) {
	st := CopyStats{inode: map[[2]uint64]string{}}
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, fmt.Errorf("open %s: %w", src, err)
	}
	defer unix.Close(sfd)
	var fi unix.Stat_t
	if err := unix.Fstat(sfd, &fi); err != nil {
		return st, err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return st, err
	}
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(dfd)
	st.root = dfd
	if err := copyDir(sfd, dfd, ".", &st); err != nil {
		return st, err
	}
	return st, finish(sfd, dfd, "", fi)
}

func copyDir(sfd, dfd int, rel string, st *CopyStats) error {
	st.Dirs++
	// ReadDir on a duplicate: os.File takes ownership of the fd it is given.
	dup, err := unix.Dup(sfd)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), rel)
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	for _, e := range ents {
		name, path := e.Name(), filepath.Join(rel, e.Name())
		var fi unix.Stat_t
		if err := unix.Fstatat(sfd, name, &fi, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		switch fi.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := copySubdir(sfd, dfd, name, path, st); err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := copyFile(sfd, dfd, name, path, st); err != nil {
				return err
			}
		case unix.S_IFLNK:
			target, err := readlinkat(sfd, name)
			if err != nil {
				return fmt.Errorf("readlink %s: %w", path, err)
			}
			if err := unix.Symlinkat(target, dfd, name); err != nil {
				return fmt.Errorf("symlink %s: %w", path, err)
			}
			st.Links++
			ts := []unix.Timespec{fi.Atim, fi.Mtim}
			_ = unix.UtimesNanoAt(dfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
		case unix.S_IFIFO:
			if err := unix.Mkfifoat(dfd, name, fi.Mode&0o7777); err != nil {
				return fmt.Errorf("mkfifo %s: %w", path, err)
			}
		default: // sockets belong to a running process; devices cannot be made here
			st.Skipped = append(st.Skipped, path)
		}
	}
	return nil
}

func copySubdir(sfd, dfd int, name, path string, st *CopyStats) error {
	csfd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(csfd)
	var fi unix.Stat_t
	if err := unix.Fstat(csfd, &fi); err != nil {
		return err
	}
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return fmt.Errorf("mkdir %s: %w", path, err)
	}
	cdfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(cdfd)
	if err := copyDir(csfd, cdfd, path, st); err != nil {
		return err
	}
	return finish(csfd, cdfd, path, fi)
}

// finish gives a copied directory its source's extended attributes, mode and times,
// once its entries are in (a read-only directory could not have been filled).
func finish(sfd, fd int, path string, fi unix.Stat_t) error {
	if err := copyXattrs(sfd, fd, path); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, fi.Mode&0o7777); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return unix.Futimes(fd, []unix.Timeval{unix.NsecToTimeval(fi.Atim.Nano()), unix.NsecToTimeval(fi.Mtim.Nano())})
}

func copyFile(sfd, dfd int, name, path string, st *CopyStats) error {
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	inf := os.NewFile(uintptr(in), path)
	defer inf.Close()
	var fi unix.Stat_t
	if err := unix.Fstat(in, &fi); err != nil {
		return err
	}
	if fi.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("copy %s: changed while copying (no longer a regular file)", path)
	}
	key := [2]uint64{uint64(fi.Dev), fi.Ino}
	if fi.Nlink > 1 {
		if first, ok := st.inode[key]; ok {
			if err := unix.Linkat(st.root, first, dfd, name, 0); err != nil {
				return fmt.Errorf("link %s: %w", path, err)
			}
			st.Hardlinked++
			return nil
		}
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	outf := os.NewFile(uintptr(out), path)
	defer outf.Close()
	if err := unix.IoctlFileClone(out, in); err == nil {
		st.Reflinked++
	} else if !cloneUnsupported(err) {
		return fmt.Errorf("clone %s: %w", path, err)
	} else if err := copySparse(outf, inf, fi.Size); err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	st.Files++
	st.Bytes += fi.Size
	if fi.Nlink > 1 {
		st.inode[key] = path
	}
	if err := copyXattrs(in, out, path); err != nil {
		return err
	}
	if err := unix.Fchmod(out, fi.Mode&0o7777); err != nil {
		return err
	}
	return unix.UtimesNanoAt(dfd, name, []unix.Timespec{fi.Atim, fi.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
}

// copySparse copies in's first size bytes to out, only its data: the holes SEEK_DATA
// and SEEK_HOLE report stay holes (a file system that cannot tell is copied whole).
func copySparse(out, in *os.File, size int64) error {
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole from here on
		}
		if err != nil {
			data = off
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil || hole > size {
			hole = size
		}
		if data >= size {
			break
		}
		if err := copyRange(out, in, data, hole-data); err != nil {
			return err
		}
		off = hole
	}
	return out.Truncate(size)
}

// copyRange copies n bytes at off from in to the same offset in out: in the kernel
// (copy_file_range) where it can, else through a buffer.
func copyRange(out, in *os.File, off, n int64) error {
	roff, woff := off, off
	for n > 0 {
		k, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(min(n, 1<<30)), 0)
		if err != nil || k == 0 {
			if k == 0 && err == nil {
				return nil // the file shrank under the copy: what is left is a hole
			}
			_, err := io.Copy(io.NewOffsetWriter(out, woff), io.NewSectionReader(in, roff, n))
			return err
		}
		n -= int64(k)
	}
	return nil
}

// cloneUnsupported: the file system (or the pair of them) cannot clone; copy instead.
func cloneUnsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.EXDEV) ||
		errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(buf[:m]), nil
		}
	}
}

// CopyFile copies the regular file src to dst (which must not exist), as CopyTree copies
// a file: cloned where it can be, else only its data (holes stay holes), its mode and
// times kept. src is opened without following a link.
func CopyFile(src, dst string) error {
	sfd, err := unix.Open(filepath.Dir(src), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Dir(src), err)
	}
	defer unix.Close(sfd)
	dfd, err := unix.Open(filepath.Dir(dst), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", filepath.Dir(dst), err)
	}
	defer unix.Close(dfd)
	st := CopyStats{inode: map[[2]uint64]string{}, root: dfd}
	if err := copyFile(sfd, dfd, filepath.Base(src), src, &st); err != nil {
		return &CopyError{Err: err}
	}
	return nil
}

// copyXattrs gives out the extended attributes of in that a sandbox can set and a copy
// must keep: user.* (tools' own metadata; overlayfs's user.overlay.* in a Nix store's
// upper layer) and POSIX ACLs. Other names (security.*, trusted.*) the sandbox cannot
// set, and the system gives the copy its own (an SELinux label).
func copyXattrs(in, out int, path string) error {
	names, err := xattrNames(in)
	if errors.Is(err, unix.ENOTSUP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("extended attributes of %s: %w", path, err)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "user.") && !strings.HasPrefix(n, "system.posix_acl_") {
			continue
		}
		v, err := xattrValue(in, n)
		if err == nil {
			err = unix.Fsetxattr(out, n, v, 0)
		}
		if err != nil {
			return fmt.Errorf("extended attribute %s of %s: %w", n, path, err)
		}
	}
	return nil
}

// xattrNames lists fd's extended attributes.
func xattrNames(fd int) ([]string, error) {
	for {
		n, err := unix.Flistxattr(fd, nil)
		if err != nil || n == 0 {
			return nil, err
		}
		buf := make([]byte, n)
		m, err := unix.Flistxattr(fd, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // grew meanwhile
		}
		if err != nil {
			return nil, err
		}
		return strings.Split(strings.TrimRight(string(buf[:m]), "\x00"), "\x00"), nil
	}
}

// xattrValue is fd's extended attribute name.
func xattrValue(fd int, name string) ([]byte, error) {
	for {
		n, err := unix.Fgetxattr(fd, name, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		m, err := unix.Fgetxattr(fd, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:m], nil
	}
}
