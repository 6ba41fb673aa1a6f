package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// systemPaths are the read-only system locations a sandbox sees, when they exist.
// /nix/store is there for Nix-built tools (and NixOS's /etc, which links into it); the
// rest of /nix is not: /nix/var holds the nix-daemon's socket, and the daemon builds and
// fetches on the host's network. Nothing under /home, /root, /var or /run is.
var systemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/nix/store"}

// runLinks are NixOS's links under /run into the store, recreated inside when present.
var runLinks = []string{"/run/current-system", "/run/booted-system"}

// DetectHost reads the facts Args depends on. It is the only part of the builder's input
// that looks at the filesystem.
func DetectHost() (Host, error) {
	var h Host
	for _, p := range systemPaths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return h, err
			}
			h.System = append(h.System, SysPath{Path: p, Link: target})
		case fi.IsDir():
			h.System = append(h.System, SysPath{Path: p})
		}
	}
	if len(h.System) == 0 {
		return h, errors.New("no system directories found (/usr, /etc)")
	}
	if t, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && t != "/etc/resolv.conf" {
		h.ResolvTarget = t
	}
	for _, p := range runLinks {
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, "/nix/store/") {
			h.RunLinks = append(h.RunLinks, SysPath{Path: p, Link: t})
		}
	}
	return h, nil
}

// ResolveTool finds name on the host PATH and follows symlinks to the real file, so the
// sandbox can bind exactly that file (profile symlink chains such as Nix's are not
// visible inside). Directories under the operator's home on PATH are searched too: a
// tool installed in ~/.local/bin is found and bound alone, not its directory.
func ResolveTool(name, pathEnv string) (Tool, error) {
	t, _, err := resolveToolFrom(name, pathEnv)
	return t, err
}

// resolveToolFrom is ResolveTool, also naming the PATH directory it was found in.
func resolveToolFrom(name, pathEnv string) (Tool, string, error) {
	if strings.Contains(name, "/") {
		return Tool{}, "", fmt.Errorf("tool %q: want a command name, not a path", name)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // relative PATH entries would depend on the working directory
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		return Tool{Name: name, Path: real}, dir, nil
	}
	return Tool{}, "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// isScript: the file starts with "#!" (a script its interpreter runs, which may load
// files beside it).
func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 2)
	n, _ := io.ReadFull(f, b)
	return n == 2 && string(b) == "#!"
}
