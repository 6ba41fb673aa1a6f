package incuslab

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Recipe is everything that decides the content of a test image. Its hash keys the
// cache, so any change here rebuilds the image on the next run.
type Recipe struct {
	Suite   string            `json:"suite"`
	Variant string            `json:"variant"`
	Include []string          `json:"include"`
	Files   map[string]string `json:"files"`   // path in rootfs -> content
	Enable  []string          `json:"enable"`  // systemd units enabled in the chroot
	Symlink map[string]string `json:"symlink"` // path in rootfs -> link target
	Empty   []string          `json:"empty"`   // files truncated to zero length
	// Install are packages apt-get installs inside the chroot after debootstrap (with
	// /proc, /sys and /dev bound in a private mount namespace): cloud-init fails when
	// debootstrap itself includes it (LAB.md).
	Install []string `json:"install,omitempty"`
	// Templates are Incus image templates: a path in the instance -> the template text,
	// rendered when an instance is created or copied (how a container gets its
	// cloud-init seed).
	Templates map[string]string `json:"templates,omitempty"`
	// KeepDBusMachineID keeps /var/lib/dbus/machine-id as the regular file dbus's
	// postinst wrote, as Debian's own images do: systemd then copies it into an empty
	// /etc/machine-id at boot, so every instance starts with that one ID unless box
	// resets both. Off (the default), the build removes it.
	KeepDBusMachineID bool `json:"keep_dbus_machine_id,omitempty"`
	// Bump Version when the build steps below change in a way the fields do not show.
	Version int `json:"version"`
}

// BookwormRecipe is the container image the lab imports: systemd with networkd asking for
// a DHCP lease on eth0 (measured in LAB.md: udev and dbus must be there or networkd
// never asks). cloud-init is left out on purpose: it makes debootstrap fail, and tests
// of user-data check the request sent to Incus. A cloud-init variant (LAB.md, built in
// the chroot, with image templates seeding NoCloud) is for later.
func BookwormRecipe() Recipe {
	return Recipe{
		Suite:   "bookworm",
		Variant: "minbase",
		Include: []string{"systemd-sysv", "udev", "dbus", "systemd-resolved", "iproute2",
			"iputils-ping", "curl", "netcat-openbsd", "sudo", "ca-certificates", "tmux"},
		Files: map[string]string{
			"/etc/systemd/network/eth0.network": "[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\n",
		},
		Enable: []string{"systemd-networkd", "systemd-resolved"},
		// The stub resolver, so the DHCP-provided DNS is used.
		Symlink: map[string]string{"/etc/resolv.conf": "../run/systemd/resolve/stub-resolv.conf"},
		// An empty hostname lets the instance name win over the build host's; an empty
		// machine-id makes systemd generate one per instance.
		Empty:   []string{"/etc/hostname", "/etc/machine-id"},
		Version: 1,
	}
}

// DebianLayoutRecipe is BookwormRecipe laid out like Debian's images: the build-time
// machine ID kept at /var/lib/dbus/machine-id (a regular file, which systemd restores
// into an emptied /etc/machine-id), the layout where clones shared their source's ID.
func DebianLayoutRecipe() Recipe {
	r := BookwormRecipe()
	r.KeepDBusMachineID = true
	return r
}

// Hash is the cache key of the recipe.
func (r Recipe) Hash() string {
	b, _ := json.Marshal(r) // maps marshal with sorted keys: stable
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:16]
}

// Image is a split Incus image (metadata tarball + rootfs tarball) on disk.
type Image struct {
	Dir      string
	Metadata string // metadata.tar
	Rootfs   string // rootfs.tar
	Hash     string
}

// CacheDir is where built images are kept: $BOX_TEST_CACHE/images, default
// /var/cache/box-test/images.
func CacheDir() string {
	if d := os.Getenv("BOX_TEST_CACHE"); d != "" {
		return filepath.Join(d, "images")
	}
	return "/var/cache/box-test/images"
}

// DebianMirror is the mirror debootstrap uses: $BOX_TEST_DEBIAN_MIRROR, else the first
// non-security URI of the machine's deb822 Debian source, else deb.debian.org.
func DebianMirror() string {
	if m := os.Getenv("BOX_TEST_DEBIAN_MIRROR"); m != "" {
		return m
	}
	if m := mirrorFromSources("/etc/apt/sources.list.d/debian.sources"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

func mirrorFromSources(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "URIs:") {
			continue
		}
		for _, u := range strings.Fields(strings.TrimPrefix(line, "URIs:")) {
			if !strings.Contains(u, "security") {
				return u
			}
		}
	}
	return ""
}

// EnsureImage returns the cached image for r, building it first when missing. Concurrent
// callers (several test packages) serialise on a lock file; only one builds.
func EnsureImage(ctx context.Context, r Recipe, logf func(string, ...any)) (Image, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	hash := r.Hash()
	root := CacheDir()
	img := Image{Dir: filepath.Join(root, hash), Hash: hash}
	img.Metadata = filepath.Join(img.Dir, "metadata.tar")
	img.Rootfs = filepath.Join(img.Dir, "rootfs.tar")
	if complete(img) {
		return img, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return img, fmt.Errorf("image cache %s: %w", root, err)
	}
	lock, err := os.OpenFile(filepath.Join(root, "."+hash+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return img, fmt.Errorf("image cache lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return img, fmt.Errorf("image cache lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if complete(img) { // built by another process while we waited
		return img, nil
	}
	start := time.Now()
	logf("incuslab: building image %s (debootstrap %s from %s)", hash, r.Suite, DebianMirror())
	if err := build(ctx, r, img, logf); err != nil {
		return img, fmt.Errorf("build test image %s: %w", hash, err)
	}
	logf("incuslab: image %s built in %s", hash, time.Since(start).Round(100*time.Millisecond))
	return img, nil
}

func complete(img Image) bool {
	_, err1 := os.Stat(img.Metadata)
	_, err2 := os.Stat(img.Rootfs)
	return err1 == nil && err2 == nil
}

func build(ctx context.Context, r Recipe, img Image, logf func(string, ...any)) error {
	if os.Geteuid() != 0 {
		return errors.New("debootstrap needs root")
	}
	tmp := img.Dir + fmt.Sprintf(".build-%d", os.Getpid())
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rootfs := filepath.Join(tmp, "rootfs")
	logPath := filepath.Join(tmp, "debootstrap.log")

	if err := baseRootfs(ctx, r, logPath, rootfs, logf); err != nil {
		return err
	}
	if err := installInChroot(ctx, logPath, rootfs, r.Install); err != nil {
		return err
	}
	for p, content := range r.Files {
		dst := filepath.Join(rootfs, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if len(r.Enable) > 0 {
		// systemctl enable works offline in a chroot: it only writes symlinks.
		if err := runLogged(ctx, logPath, "chroot", append([]string{rootfs, "systemctl", "enable"}, r.Enable...)...); err != nil {
			return err
		}
	}
	for p, target := range r.Symlink {
		dst := filepath.Join(rootfs, p)
		_ = os.Remove(dst)
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
	}
	for _, p := range r.Empty {
		if err := os.WriteFile(filepath.Join(rootfs, p), nil, 0o644); err != nil {
			return err
		}
	}
	dbusID := filepath.Join(rootfs, "var/lib/dbus/machine-id")
	if !r.KeepDBusMachineID {
		_ = os.Remove(dbusID)
	} else if fi, err := os.Lstat(dbusID); err != nil || !fi.Mode().IsRegular() {
		// dbus's postinst writes it only when no valid ID was there yet: make sure the
		// layout is the one asked for, a regular file holding an ID.
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return err
		}
		_ = os.Remove(dbusID)
		if err := os.MkdirAll(filepath.Dir(dbusID), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dbusID, []byte(hex.EncodeToString(id[:])+"\n"), 0o444); err != nil {
			return err
		}
	}
	for _, d := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		entries, _ := filepath.Glob(filepath.Join(rootfs, d, "*"))
		for _, e := range entries {
			if fi, err := os.Lstat(e); err == nil && !fi.IsDir() {
				_ = os.Remove(e)
			}
		}
	}

	meta := filepath.Join(tmp, "meta")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(meta, "metadata.yaml"), []byte(metadataYAML(r, time.Now())), 0o644); err != nil {
		return err
	}
	metaFiles := []string{"metadata.yaml"}
	if len(r.Templates) > 0 {
		if err := os.MkdirAll(filepath.Join(meta, "templates"), 0o755); err != nil {
			return err
		}
		for _, p := range slices.Sorted(maps.Keys(r.Templates)) {
			if err := os.WriteFile(filepath.Join(meta, "templates", templateFile(p)), []byte(r.Templates[p]), 0o644); err != nil {
				return err
			}
		}
		metaFiles = append(metaFiles, "templates")
	}
	out := tmp + ".out"
	_ = os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(out)
	if err := runLogged(ctx, logPath, "tar", append([]string{"-C", meta, "-cf", filepath.Join(out, "metadata.tar")}, metaFiles...)...); err != nil {
		return err
	}
	// Uncompressed: the upload is over a local socket, and compressing ~250 MB costs
	// more time than it saves.
	if err := runLogged(ctx, logPath, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=*",
		"-C", rootfs, "-cf", filepath.Join(out, "rootfs.tar"), "."); err != nil {
		return err
	}
	_ = os.RemoveAll(img.Dir)
	return os.Rename(out, img.Dir)
}

func metadataYAML(r Recipe, now time.Time) string {
	s := fmt.Sprintf(`architecture: x86_64
creation_date: %d
properties:
  description: box test image, Debian %s (recipe %s)
  os: debian
  release: %s
  architecture: amd64
  variant: box-test
`, now.Unix(), r.Suite, r.Hash(), r.Suite)
	if len(r.Templates) > 0 {
		s += "templates:\n"
		for _, p := range slices.Sorted(maps.Keys(r.Templates)) {
			s += fmt.Sprintf("  %s:\n    when: [create, copy]\n    template: %s\n    properties:\n      default: \"#cloud-config\\n{}\\n\"\n", p, templateFile(p))
		}
	}
	return s
}

// templateFile names the template of an instance path: /var/lib/x/user-data ->
// var-lib-x-user-data.tpl.
func templateFile(p string) string {
	return strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "-") + ".tpl"
}

// installScript installs packages in the chroot ROOT with /proc, /sys and /dev bound, in
// a private mount namespace (the binds vanish with it), and no service started
// (policy-rc.d). It runs under unshare -m.
const installScript = `set -e
for d in proc sys dev; do mount --rbind /$d "$ROOT/$d"; done
# The build host's resolver, for apt only: the symlink step replaces it afterwards.
rm -f "$ROOT/etc/resolv.conf"
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
chmod 755 "$ROOT/usr/sbin/policy-rc.d"
APT="-o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false"
chroot "$ROOT" apt-get $APT update -q
DEBIAN_FRONTEND=noninteractive chroot "$ROOT" apt-get $APT install -y -q --no-install-recommends "$@"
chroot "$ROOT" apt-get clean
rm -f "$ROOT/usr/sbin/policy-rc.d"
`

func installInChroot(ctx context.Context, logPath, rootfs string, pkgs []string) error {
	if len(pkgs) == 0 {
		return nil
	}
	args := append([]string{"-m", "--propagation", "private", "env", "ROOT=" + rootfs, "sh", "-c", installScript, "install"}, pkgs...)
	return runLogged(ctx, logPath, "unshare", args...)
}

// runLogged runs a command with its output appended to logPath; on failure the error
// carries the log's tail.
func runLogged(ctx context.Context, logPath, name string, args ...string) error {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "+ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, tail(logPath, 2000))
	}
	return nil
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
