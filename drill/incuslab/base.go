package incuslab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// The recipes differ only after debootstrap (a kept machine ID, cloud-init installed in
// the chroot), and debootstrap is most of an image's build: 6-9 minutes each on a fresh
// machine under load, three times. So its tree is built once per (suite, variant,
// include) and kept beside the images; each recipe's build starts from a copy of it.

// baseKey is the recipe's debootstrap: what decides the base tree's content.
func (r Recipe) baseKey() string {
	b, _ := json.Marshal(struct {
		Suite, Variant string
		Include        []string
		Version        int // of the base's build steps, as Recipe.Version is of the image's
	}{r.Suite, r.Variant, r.Include, 1})
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:16]
}

// baseRootfs copies the recipe's debootstrap tree into rootfs (which must not exist),
// building the tree first when no earlier build left it.
func baseRootfs(ctx context.Context, r Recipe, logPath, rootfs string, logf func(string, ...any)) error {
	dir := filepath.Join(CacheDir(), "base-"+r.baseKey())
	tree := filepath.Join(dir, "rootfs")
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("base tree lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("base tree lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(tree); err != nil {
		start := time.Now()
		logf("incuslab: building base tree %s (debootstrap %s from %s)", r.baseKey(), r.Suite, DebianMirror())
		// Built aside and renamed in, so a killed build leaves no half tree to copy.
		tmp := dir + fmt.Sprintf(".build-%d", os.Getpid())
		_ = os.RemoveAll(tmp)
		defer os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return err
		}
		args := []string{"--variant=" + r.Variant, "--include=" + strings.Join(r.Include, ","),
			r.Suite, filepath.Join(tmp, "rootfs"), DebianMirror()}
		if err := runLogged(ctx, logPath, "debootstrap", args...); err != nil {
			return err
		}
		_ = os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			return err
		}
		logf("incuslab: base tree %s built in %s", r.baseKey(), time.Since(start).Round(100*time.Millisecond))
	}
	// cp -a keeps owners, modes, hard links, device nodes and xattrs, as debootstrap made them.
	return runLogged(ctx, logPath, "cp", "-a", tree, rootfs)
}
