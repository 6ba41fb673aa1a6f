package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/progress"
	"github.com/spf13/cobra"
)

// exportWarning is said on every export, --quiet or not: the file is the box's whole
// disk, logins and keys included, and nothing in it is scrubbed (a scrubbed disk image
// is a promise no tarball surgery can keep).
const exportWarning = `box: warning: %s holds the box's ENTIRE disk (and its snapshots unless --instance-only):
box: warning: agent logins, git credentials, SSH keys, shell history. Nothing in it is scrubbed.
box: warning: treat the file as a credential: private storage, trusted channels only.
`

func newExportCmd(e *env) *cobra.Command {
	var instanceOnly bool
	cmd := &cobra.Command{
		Use:     "export BOX [FILE]",
		Short:   "write a stopped box, snapshots included, to one file",
		GroupID: groupVM,
		Long: `Export a stopped box to one file (an Incus instance backup, gzip-compressed tar),
snapshots included unless --instance-only. 'box import FILE' brings it back, on this
host or another. FILE defaults to BOX-<UTC time>.tar.gz; an existing file is never
overwritten. The file is written with mode 0600.

The box must be stopped: a running disk is a moving target. The file holds everything
in the box, logins and keys included: box says so on every export.`,
		Example: `  box stop work && box export work
  box export work work.tar.gz --instance-only`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("run 'box export --help' for usage", "export takes a box and an optional file")
			}
			return nil
		},
		ValidArgsFunction: completeBoxes(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := vmOnlyVerb(e, "export", name); err != nil {
				return err
			}
			now := time.Now().UTC()
			file := name + "-" + now.Format("20060102T150405Z") + ".tar.gz"
			if len(args) == 2 {
				file = args[1]
			}
			return runExport(e, name, file, instanceOnly, now)
		},
	}
	cmd.Flags().BoolVar(&instanceOnly, "instance-only", false, "leave the snapshots out")
	return cmd
}

func runExport(e *env, name, file string, instanceOnly bool, now time.Time) error {
	if err := incus.ValidateName(name); err != nil {
		return vmErr(e, err)
	}
	if _, err := os.Lstat(file); err == nil {
		return withHint(fmt.Errorf("%s already exists: box export never overwrites a file", file), "name another FILE, or remove that one first")
	}
	ctx, stop := vmContext()
	defer stop()
	c := e.client()
	defer c.Close()
	inst, err := resolve(ctx, e, c, name)
	if err != nil {
		return err
	}
	if inst.Running() {
		return withHint(fmt.Errorf("box %q is running: export wants a settled disk, stop it first", name), "box stop "+name+" && box export "+name)
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

	p := newProgress(e)
	defer p.Done()
	backup := "box-export-" + fmt.Sprint(now.UnixNano())
	p.Step("backing up %s in incusd", name)
	req := incus.BackupsPost{Name: backup, ExpiresAt: now.Add(24 * time.Hour), InstanceOnly: instanceOnly, CompressionAlgorithm: "gzip"}
	if err := c.CreateBackup(ctx, name, req); err != nil {
		return exportErr(e, err)
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
		return exportErr(e, err)
	}
	if _, err := os.Lstat(file); err == nil { // appeared meanwhile
		return withHint(fmt.Errorf("%s appeared during the export: not overwritten", file), "name another FILE")
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	done = true
	p.Done()
	fmt.Fprintf(e.stderr, exportWarning, file)
	what := "with its snapshots"
	if instanceOnly {
		what = "without its snapshots"
	}
	note(e, "exported %s %s to %s (%s): 'box import %s' brings it back", name, what, file, progress.Size(n), file)
	return nil
}

func exportErr(e *env, err error) error {
	if errors.Is(err, context.Canceled) {
		return errors.New("interrupted: nothing was exported")
	}
	return vmErr(e, err)
}
