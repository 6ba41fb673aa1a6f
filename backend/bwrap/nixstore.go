package bwrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
