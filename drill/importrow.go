package drill

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
)

// The import row of the vm drill: what an attacker who hands someone an export file
// does. A box is minted and exported through the API, and the export gets one member
// box export never writes: an exec-output symlink to a directory on the host, through
// which incusd writes a recorded exec's output as root (GHSA-73hr-m85f-64v9). box
// import must refuse it by name and create nothing. If it lets the file in, the row is
// a BREACH, and it runs a recorded exec to say whether this incusd then wrote on the host.

// CraftedImportOptions tune the import row.
type CraftedImportOptions struct {
	Client *incus.Client
	// Mint mints a box the way box new does; Run runs box import.
	Mint func(ctx context.Context, name string) error
	Run  VerbRunner
	// Dir holds the export file and the host directory the symlink aims at ("": the
	// system's temporary directory).
	Dir  string
	Logf func(string, ...any)
}

// CraftedImport runs the import row.
func CraftedImport(ctx context.Context, o CraftedImportOptions) Result {
	r := Result{ID: "verbs:import-crafted", Group: "verbs",
		Probe:   "box import of an export crafted to write on the host (an exec-output symlink to a host directory)",
		Targets: []string{}, Expected: "refused by name, nothing created, nothing written on the host"}
	seen, detail, err := craftedImport(ctx, o, &r)
	return judged(r, Blocked, seen, detail, err)
}

func craftedImport(ctx context.Context, o CraftedImportOptions, r *Result) (bool, string, error) {
	c := o.Client
	if o.Run == nil || o.Mint == nil {
		return false, "", errors.New("no way to run box new and box import")
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	nonce := make([]byte, 3)
	rand.Read(nonce)
	src := "import-drill-" + hex.EncodeToString(nonce)
	dst := src + "-in"
	r.Targets = []string{dst}
	defer func() {
		// Only this row's own names.
		cctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		for _, n := range []string{src, dst} {
			if _, _, err := c.Instance(cctx, n); err != nil {
				continue
			}
			_ = c.Stop(cctx, n, 0, true)
			if err := c.Delete(cctx, n); err != nil && !incus.IsNotFound(err) {
				logf("drill: could not delete %s: %v", n, err)
			}
		}
	}()
	dir, err := os.MkdirTemp(o.Dir, "box-drill-import-")
	if err != nil {
		return false, "", err
	}
	defer os.RemoveAll(dir)
	hostDir := filepath.Join(dir, "host")
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		return false, "", err
	}
	if err := o.Mint(ctx, src); err != nil {
		return false, "", err
	}
	if err := c.Stop(ctx, src, 0, true); err != nil {
		return false, "", err
	}
	clean, crafted := filepath.Join(dir, "clean.tar"), filepath.Join(dir, "crafted.tar")
	if err := exportPlain(ctx, c, src, clean); err != nil {
		return false, "", err
	}
	if err := addSymlink(clean, crafted, "backup/container/exec-output", hostDir); err != nil {
		return false, "", err
	}
	out := o.Run(ctx, []string{"import", crafted, "--name", dst, "--quiet"}, false)
	if out.Err != nil {
		return false, "", fmt.Errorf("box import: %w", out.Err)
	}
	_, _, ierr := c.Instance(ctx, dst)
	if ierr != nil && !incus.IsNotFound(ierr) {
		return false, "", ierr
	}
	if ierr != nil && out.Code != 0 {
		if !strings.Contains(out.Stderr, vm.UnsafeMemberMessage) {
			// Refused, but not for what the row plants: it proved nothing.
			return false, "", fmt.Errorf("box import refused the file for another reason (exit %d): %s", out.Code, firstLine(out.Stderr))
		}
		return false, "refused: " + firstLine(out.Stderr), nil
	}
	detail := fmt.Sprintf("imported (exit %d): its exec-output symlink to %s is in the box's directory on the host", out.Code, hostDir)
	body := map[string]any{"command": []string{"echo", "box drill"}, "record-output": true, "wait-for-websocket": false, "interactive": false}
	// box import starts what it imports.
	if err := c.Query(ctx, "POST", "/instances/"+dst+"/exec", body, nil); err == nil {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if got, _ := filepath.Glob(filepath.Join(hostDir, "exec_*")); len(got) > 0 {
				detail += "; incusd wrote " + got[0] + " on the host through it"
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return true, detail, nil
}

// exportPlain writes an uncompressed export of name (no snapshots) to file.
func exportPlain(ctx context.Context, c *incus.Client, name, file string) error {
	const backup = "drill"
	req := incus.BackupsPost{Name: backup, ExpiresAt: time.Now().Add(time.Hour), InstanceOnly: true, CompressionAlgorithm: "none"}
	if err := c.CreateBackup(ctx, name, req); err != nil {
		return err
	}
	defer c.DeleteBackup(context.Background(), name, backup)
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.ExportBackup(ctx, name, backup, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// addSymlink copies the tar in to out with one more member: a symlink name -> target.
func addSymlink(in, out, name, target string) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(out)
	if err != nil {
		return err
	}
	defer dst.Close()
	tr, tw := tar.NewReader(src), tar.NewWriter(dst)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return dst.Close()
}
