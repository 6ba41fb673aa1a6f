package bwrap

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// NixStoreSubcommand is the hidden box subcommand that prepares a per-project Nix store
// and then becomes bwrap (see NixStoreMain).
const NixStoreSubcommand = "__nix-store"

// NixStoreDirs are the parts of a per-project store directory: the overlay's upper and
// work directories, its mount point, and /nix/var (the store's own database).
var NixStoreDirs = []string{"upper", "work", "merged", "var"}

// nixStoreArgv is the helper's argv: box __nix-store DIR -- BWRAP ARGS...
func nixStoreArgv(self, dir, bwrap string, args []string) []string {
	return append([]string{self, NixStoreSubcommand, dir, "--", bwrap}, args...)
}

// PrepareNixStore makes a per-project store directory (as the operator, so its files
// are the operator's). The overlay takes its options as a comma-separated list, so the
// path must not hold ',', ':' or '\'.
func PrepareNixStore(dir string) error {
	if strings.ContainsAny(dir, ",:\\") {
		return fmt.Errorf("nix store directory %s: the path holds ',', ':' or '\\', which overlayfs cannot take", dir)
	}
	for _, d := range NixStoreDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
		// A planted link would redirect the mounts the helper makes.
		if fi, err := os.Lstat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			return fmt.Errorf("nix store directory %s/%s: not a directory", dir, d)
		}
	}
	return nil
}

// NixStoreMain runs in a user and mount namespace of its own, as its root (box starts it
// so: CLONE_NEWUSER|CLONE_NEWNS, the operator's uid mapped to 0). It layers the
// project's store over the host's read-only one (overlayfs: writes land in DIR/upper,
// never in the host's store), hides the rest of the host's /nix (the daemon's socket,
// its database) behind a tmpfs, binds DIR/var at /nix/var, and execs bwrap, which keeps
// this process's pid and fds. Its mounts never reach the host: the namespace is private.
func NixStoreMain(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "box: error: usage: box __nix-store DIR -- BWRAP ARGS...")
		return 2
	}
	if err := nixStoreMounts(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "box: error: per-project Nix store: %v\n", err)
		fmt.Fprintln(os.Stderr, "box: hint: it needs unprivileged user namespaces and overlayfs in them (Linux 5.11 or later); run 'box --check'")
		return 125
	}
	err := syscall.Exec(args[2], args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "box: error: exec %s: %v\n", args[2], err)
	return 125
}

func nixStoreMounts(dir string) error {
	if !filepath.IsAbs(dir) || strings.ContainsAny(dir, ",:\\") {
		return fmt.Errorf("bad store directory %q", dir)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	merged := filepath.Join(dir, "merged")
	opts := "lowerdir=/nix/store,upperdir=" + filepath.Join(dir, "upper") + ",workdir=" + filepath.Join(dir, "work")
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay over /nix/store: %w", err)
	}
	if err := unix.Mount("box-nix", "/nix", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs over /nix: %w", err)
	}
	for _, d := range []string{"/nix/store", "/nix/var"} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	if err := unix.Mount(merged, "/nix/store", "", unix.MS_MOVE, ""); err != nil {
		return fmt.Errorf("move the store into place: %w", err)
	}
	if err := unix.Mount(filepath.Join(dir, "var"), "/nix/var", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /nix/var: %w", err)
	}
	return nil
}

// nixStoreAttr starts the helper in a user namespace where the operator is root (so it
// may mount) and a mount namespace of its own.
func nixStoreAttr(sys *syscall.SysProcAttr) {
	sys.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	sys.GidMappingsEnableSetgroups = false
}

// NixStoreTrial does what nix = "store" does before bwrap, for real, in a throwaway
// directory, and then runs /bin/true instead of bwrap: nil means the mechanism works here.
func NixStoreTrial(self string) error {
	dir, err := os.MkdirTemp("", "box-nixstore-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := PrepareNixStore(dir); err != nil {
		return err
	}
	sys := &syscall.SysProcAttr{}
	nixStoreAttr(sys)
	cmd := exec.Command(self, NixStoreSubcommand, dir, "--", "/bin/true")
	cmd.SysProcAttr = sys
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hostPathsFile, in a per-project store directory (outside the sandbox's view), records
// which of the host store's paths are registered valid in the project's database: a first
// line with /nix/store's mtime at the last sync, then one name a line.
const hostPathsFile = "host-paths"

// The project's store sees the host's paths (its overlay's lower layer) but its database
// starts empty: to the Nix inside, a path the host already holds would be invalid, and
// Nix deletes an invalid path before it writes it again, which the host's files refuse
// (chmod: Operation not permitted). RegisterHostPaths registers the host's valid paths in
// the project's database, as they are, so the Nix inside uses them and never writes them.
// The host's store and database are only read. The registration runs in a sandbox of its
// own (bwrap: the host's store and system read-only, the project's /nix/var its only
// writable place), since that database is the sandbox's to write and a link planted in
// it must not lead a host process anywhere.
//
// Only new names cost anything: an unchanged /nix/store (its mtime) costs one stat. A path
// the host later collects stays registered inside (the Nix inside then finds it missing);
// a fresh store (trust.go) starts over.
func RegisterHostPaths(bwrap string, h Host, dir string) error {
	fi, err := os.Stat("/nix/store")
	if err != nil {
		return fmt.Errorf("nix store: %w", err)
	}
	stamp := strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	recPath := filepath.Join(dir, hostPathsFile)
	done := map[string]bool{}
	if b, err := os.ReadFile(recPath); err == nil {
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if lines[0] == stamp {
			return nil
		}
		for _, l := range lines[1:] {
			done[l] = true
		}
	}
	ents, err := os.ReadDir("/nix/store")
	if err != nil {
		return fmt.Errorf("nix store: %w", err)
	}
	var fresh []string
	for _, e := range ents {
		if n := e.Name(); storePathName(n) && !done[n] {
			fresh = append(fresh, "/nix/store/"+n)
		}
	}
	if len(fresh) > 0 {
		valid, err := hostValid(fresh)
		if err != nil {
			return err
		}
		if err := loadHostPaths(bwrap, h, dir, valid); err != nil {
			return err
		}
		for _, p := range valid {
			done[strings.TrimPrefix(p, "/nix/store/")] = true
		}
	}
	names := make([]string, 0, len(done))
	for n := range done {
		names = append(names, n)
	}
	sort.Strings(names)
	return os.WriteFile(recPath, []byte(stamp+"\n"+strings.Join(names, "\n")+"\n"), 0o600)
}

// storePathName: a store path's base name (32 base-32 characters, '-', a name); the
// store's lock files, temporaries and .links are not paths.
func storePathName(n string) bool {
	if len(n) < 34 || n[32] != '-' || strings.HasSuffix(n, ".lock") {
		return false
	}
	for _, c := range n[:32] {
		if !strings.ContainsRune("0123456789abcdfghijklmnpqrsvwxyz", c) {
			return false
		}
	}
	return true
}

// hostChunk bounds the paths one nix-store command line names (ARG_MAX).
const hostChunk = 2000

// hostValid returns those of paths the host's Nix holds valid (a path being built, or
// left over, is not), asking the host's own store (its daemon, or its local database).
func hostValid(paths []string) ([]string, error) {
	invalid := map[string]bool{}
	for i := 0; i < len(paths); i += hostChunk {
		chunk := paths[i:min(i+hostChunk, len(paths))]
		out, err := hostNix("--check-validity", "--print-invalid", chunk, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range strings.Fields(string(out)) {
			invalid[p] = true
		}
	}
	var valid []string
	for _, p := range paths {
		if !invalid[p] {
			valid = append(valid, p)
		}
	}
	return valid, nil
}

func hostNix(op, flag string, paths []string, stdin []byte) ([]byte, error) {
	args := []string{op}
	if flag != "" {
		args = append(args, flag)
	}
	cmd := exec.Command("nix-store", append(args, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("nix = \"store\": reading the host's store (nix-store %s): %v: %s", op, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// loadHostPaths dumps the paths' registrations from the host's store and loads them
// into the project's database, in the registration sandbox.
func loadHostPaths(bwrap string, h Host, dir string, paths []string) error {
	var dump []byte
	for i := 0; i < len(paths); i += hostChunk {
		out, err := hostNix("--dump-db", "", paths[i:min(i+hostChunk, len(paths))], nil)
		if err != nil {
			return err
		}
		dump = append(dump, out...)
	}
	// Its directory's links followed (a Nix profile's bin is a link into the store), not
	// its own: nix-store is a name of the multi-call nix, which reads its argv[0].
	nixStore, err := exec.LookPath("nix-store")
	if err == nil {
		var d string
		d, err = filepath.EvalSymlinks(filepath.Dir(nixStore))
		nixStore = filepath.Join(d, "nix-store")
	}
	if err != nil {
		return fmt.Errorf("nix = \"store\": nix-store: %w", err)
	}
	cmd := exec.Command(bwrap, registerArgs(h, dir, nixStore)...)
	name := "box"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/tmp", "USER=" + name, "NIX_REMOTE=local", "NIX_CONF_DIR=/nonexistent",
		"NIX_CONFIG=build-users-group =\nsandbox = false\n"}
	cmd.Stdin = bytes.NewReader(dump)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nix = \"store\": registering the host's paths in the project's store: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// registerArgs is the registration sandbox's bwrap argv: the host's system and store
// read-only, the project's /nix/var writable, nothing else of the host (no home, no
// /etc, no network), then nix-store --load-db.
func registerArgs(h Host, dir, nixStore string) []string {
	a := []string{"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--tmpfs", "/"}
	for _, s := range h.System {
		switch {
		case s.Path == "/etc", s.Path == "/nix/store":
		case s.Link != "":
			a = append(a, "--symlink", s.Link, s.Path)
		default:
			a = append(a, "--ro-bind", s.Path, s.Path)
		}
	}
	return append(a, "--ro-bind-try", "/nix/store", "/nix/store", "--bind", filepath.Join(dir, "var"), "/nix/var",
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", nixStore, "--load-db")
}
