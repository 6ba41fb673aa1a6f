package dirbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// CopyStats says what a copy did: how many files were cloned (reflinked) and how many
// copied byte by byte, with their total size, and what was left out.
type CopyStats struct {
	Dirs, Files, Links, Reflinked int
	Bytes                         int64
	Skipped                       []string // sockets and devices, relative to the source
}

// CopyTree copies the directory src to dst (which must not exist), preserving modes,
// modification times and symbolic links as links. Files are cloned where the file
// system can (FICLONE: btrfs, XFS, bcachefs...), else copied.
//
// src is written by a sandbox, possibly while the copy runs, so it is walked by file
// descriptor: every directory is opened relative to its parent with O_NOFOLLOW, every
// file with O_NOFOLLOW, so a directory swapped for a link mid-copy fails the copy
// instead of leading it out of the box. Hard links are copied as separate files.
func CopyTree(src, dst string) (CopyStats, error) {
	var st CopyStats
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
	if err := copyDir(sfd, dfd, ".", &st); err != nil {
		return st, err
	}
	return st, finish(dfd, "", fi)
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
	return finish(cdfd, path, fi)
}

// finish gives a copied directory its source's mode and times, once its entries are in
// (a read-only directory could not have been filled).
func finish(fd int, path string, fi unix.Stat_t) error {
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
	} else if _, err := io.Copy(outf, inf); err != nil {
		return fmt.Errorf("copy %s: %w", path, err)
	}
	st.Files++
	st.Bytes += fi.Size
	if err := unix.Fchmod(out, fi.Mode&0o7777); err != nil {
		return err
	}
	return unix.UtimesNanoAt(dfd, name, []unix.Timespec{fi.Atim, fi.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
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
