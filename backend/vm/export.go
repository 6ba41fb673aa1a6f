package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/progress"
)

// exportWarning is said on every export, --quiet or not: the file is the box's whole
// disk, logins and keys included, and nothing in it is scrubbed (a scrubbed disk image
// is a promise no tarball surgery can keep).
const exportWarning = `box: warning: %s holds the box's ENTIRE disk (and its snapshots unless --instance-only):
box: warning: agent logins, git credentials, SSH keys, shell history. Nothing in it is scrubbed.
box: warning: treat the file as a credential: private storage, trusted channels only.
`

// Export is box export: the stopped box name, as an Incus backup (its snapshots too
// unless instanceOnly), to file, which it never overwrites.
func (b Backend) Export(name, file string, instanceOnly bool, now time.Time) error {
	if err := incus.ValidateName(name); err != nil {
		return b.err(err)
	}
	if _, err := os.Lstat(file); err == nil {
		return errs.WithHint(fmt.Errorf("%s already exists: box export never overwrites a file", file), "name another FILE, or remove that one first")
	}
	ctx, stop := b.Context()
	defer stop()
	c := b.Client()
	defer c.Close()
	inst, err := b.Resolve(ctx, c, name)
	if err != nil {
		return err
	}
	if inst.Running() {
		return &backend.RunningError{Name: name, Verb: "export", Why: "export wants a settled disk, stop it first"}
	}

	// The partial file is a sibling, so the rename is atomic; it is removed on any
	// failure, so an interrupted export leaves nothing that looks like an export.
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".part-*")
	if err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}

	p := b.progress()
	defer p.Done()
	backup := "box-export-" + fmt.Sprint(now.UnixNano())
	p.Step("backing up %s in incusd", name)
	req := incus.BackupsPost{Name: backup, ExpiresAt: now.Add(24 * time.Hour), InstanceOnly: instanceOnly, CompressionAlgorithm: "gzip"}
	if err := c.CreateBackup(ctx, name, req); err != nil {
		return b.exportErr(err)
	}
	// The backup lives in incusd's storage until deleted (or it expires): always delete
	// it, with a deadline of its own (ctx may be cancelled).
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.DeleteBackup(dctx, name, backup)
	}()
	cnt := p.Count("exporting " + name + " to " + file)
	n, err := c.ExportBackup(ctx, name, backup, io.MultiWriter(tmp, cnt))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return b.exportErr(err)
	}
	if _, err := os.Lstat(file); err == nil { // appeared meanwhile
		return errs.WithHint(fmt.Errorf("%s appeared during the export: not overwritten", file), "name another FILE")
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	done = true
	p.Done()
	fmt.Fprintf(b.Stderr, exportWarning, file)
	what := "with its snapshots"
	if instanceOnly {
		what = "without its snapshots"
	}
	b.note("exported %s %s to %s (%s): 'box import %s' brings it back", name, what, file, progress.Size(n), file)
	return nil
}

func (b Backend) exportErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted: nothing was exported")
	}
	return b.err(err)
}
