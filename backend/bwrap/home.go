package bwrap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// HomeMountPoints are the bind destinations of spec that lie under $HOME, home-relative
// and sorted as Args mounts them. In a persistent box's home (which the sandbox writes)
// bwrap creates these mount points, following any link it finds on the way: each must
// be checked before launch. Pure.
func HomeMountPoints(spec Spec) []string {
	var out []string
	add := func(p string) {
		if rel, err := filepath.Rel(spec.Home, p); err == nil && rel != "." && !strings.HasPrefix(rel, "../") && rel != ".." {
			out = append(out, rel)
		}
	}
	add(filepath.Join(spec.Home, spec.StateDir))
	for _, f := range spec.AuthFiles {
		add(f)
	}
	for _, m := range spec.Mounts {
		add(m.Dst)
	}
	add(spec.Workdir)
	for _, t := range spec.Tools {
		add(t.Path)
	}
	return out
}

// PrepareHome makes a persistent box's home safe to mount into: every component of every
// mount point under it must be a real directory (or absent, for bwrap to make). A
// symbolic link there was planted by the sandbox (bwrap would follow it out of the box
// to create the mount point on the host): it is removed, and named in the returned list.
// A file where a directory must go is an error.
func PrepareHome(spec Spec) (removed []string, err error) {
	if spec.HomeDir == "" {
		return nil, nil
	}
	for _, rel := range HomeMountPoints(spec) {
		parts := strings.Split(rel, "/")
		p := spec.HomeDir
		for i, part := range parts {
			p = filepath.Join(p, part)
			fi, err := os.Lstat(p)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				return removed, err
			}
			last := i == len(parts)-1
			switch {
			case fi.Mode()&os.ModeSymlink != 0:
				if err := os.Remove(p); err != nil {
					return removed, fmt.Errorf("removing the link %s: %w", p, err)
				}
				removed = append(removed, "~/"+filepath.Join(parts[:i+1]...))
			case fi.IsDir():
				continue
			case last:
				// A file bind's mount point may be a file; a directory's is made over it
				// by bwrap only when absent.
				continue
			default:
				return removed, fmt.Errorf("~/%s in the box's home is a file where box mounts ~/%s: move it away", filepath.Join(parts[:i+1]...), rel)
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				break // removed: bwrap makes the rest as directories
			}
		}
	}
	return removed, nil
}
