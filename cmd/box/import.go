package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/internal/progress"
	"github.com/spf13/cobra"
)

func newImportCmd(e *env) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:     "import FILE [--name NAME]",
		Short:   "bring back a box from an export, onto this host's stack",
		GroupID: groupVM,
		Long: `Import a box from a file written by 'box export': its disk, its snapshots and its
stamp come back as they were; what ties it to a host is made afresh: it is placed on
this host's placement profile only, gets new MAC addresses (and, a VM, a new UUID) and
its own machine ID, and the import is recorded in its stamp (user.box.imported,
user.box.imported.last, user.box.imported.count). Then it is started.

Before anything is uploaded, box reads the file's index and refuses: an instance box
did not mint (no user.box=1 or user.claudebox=1), an instance or snapshot with a key or
device box never gives a box (a host path, another NIC, security.* or raw.*), and a name
that an instance here already has (--name picks another). The file streams to incusd;
nothing is held in memory. An import that fails or is interrupted leaves no box.`,
		Example: `  box import work-20260101T120000Z.tar.gz
  box import work.tar.gz --name work2`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("run 'box import --help' for usage", "import takes one file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(e, args[0], name, time.Now())
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the imported box's name (default: the exported box's)")
	return cmd
}

// recorder keeps what is read through it, so the head read for the index is sent too:
// the file is read once, front to back (it may be a pipe).
type recorder struct {
	r   io.Reader
	buf bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.buf.Write(p[:n])
	return n, err
}

// onEOF calls f once when r ends.
type onEOF struct {
	r    io.Reader
	f    func()
	done bool
}

func (o *onEOF) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	if err == io.EOF && !o.done {
		o.done = true
		o.f()
	}
	return n, err
}

func runImport(e *env, file, name string, now time.Time) error {
	if name != "" {
		if err := incus.ValidateName(name); err != nil {
			return vmErr(e, err)
		}
		if err := bwrapNameFree(e, name, file); err != nil {
			return err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return withHint(fmt.Errorf("import: %w", err), "name a file written by 'box export'")
	}
	defer f.Close()
	head := &recorder{r: f}
	idx, err := vm.ReadBackupIndex(head, file)
	if err != nil {
		return err
	}
	if err := vm.CheckIndex(idx); err != nil {
		return err
	}
	target := name
	if target == "" {
		target = idx.Name
		if err := incus.ValidateName(target); err != nil {
			return usagef("name the box with --name", "the export's instance name: %s", err)
		}
	}

	if err := bwrapNameFree(e, target, file); err != nil {
		return err
	}
	ctx, stop := vmContext()
	defer stop()
	c := e.client()
	defer c.Close()
	if _, _, err := c.Instance(ctx, target); err == nil {
		return withHint(fmt.Errorf("an instance named %q already exists: nothing was imported", target),
			fmt.Sprintf("import it under another name: box import %s --name NEW", file))
	} else if !incus.IsNotFound(err) {
		return vmErr(e, err)
	}
	placement := vm.Placement(e.getenv)
	pool, err := placementPool(ctx, e, c, placement)
	if err != nil {
		return err
	}

	p := newProgress(e)
	defer p.Done()
	cnt := p.Count("uploading " + file)
	body := &onEOF{r: io.TeeReader(io.MultiReader(bytes.NewReader(head.buf.Bytes()), f), cnt),
		f: func() { p.Step("incusd is unpacking %s (%s)", target, progress.Size(cnt.N())) }}
	// From here on a failure must not leave a half box behind.
	if err := c.ImportBackup(ctx, body, target, pool); err != nil {
		vm.Discard(c, target)
		return importErr(e, target, err)
	}
	if err := settleImport(ctx, c, target, placement, now); err != nil {
		var nb *vm.NotBoxExportError
		if errors.As(err, &nb) {
			// Created by this import under a name that was free: ours to delete,
			// though discard would not touch an untagged instance.
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.Delete(dctx, target)
			cancel()
		}
		vm.Discard(c, target)
		return importErr(e, target, err)
	}
	p.Done()
	note(e, "imported %s from %s: placed on %s, fresh MAC and machine ID, started; logins in it came back with it: box shell %s",
		target, file, placement, target)
	return nil
}

// settleImport makes an imported instance a box of this host: it checks what incusd
// actually created (the index may differ from the instance's own backup.yaml), places
// it on the placement profile only, drops the identity it had on its old host, records
// the import, gives it its own machine ID, and starts it.
func settleImport(ctx context.Context, c *incus.Client, name, placement string, now time.Time) error {
	inst, etag, err := c.Instance(ctx, name)
	if err != nil {
		return err
	}
	if !incus.IsBox(*inst) {
		return &vm.NotBoxExportError{Name: name}
	}
	if err := vm.CheckShape("instance", inst.Config, inst.Devices); err != nil {
		return err
	}
	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		return err
	}
	for _, s := range snaps {
		if err := vm.CheckShape("snapshot "+s.Name, s.Config, s.Devices); err != nil {
			return err
		}
	}
	cfg := inst.Config
	for _, k := range vm.HostIdentityKeys(cfg) {
		delete(cfg, k)
	}
	for k, v := range vm.ImportStamp(cfg, now) {
		cfg[k] = v
	}
	// Which host port opens a door into a box is this host's decision: exposures stay
	// behind ('box expose' them again).
	exp, _ := vm.Exposures(inst.Devices)
	for _, x := range exp {
		delete(inst.Devices, x.Device)
	}
	put := incus.InstancePut{Architecture: inst.Architecture, Config: cfg, Devices: inst.Devices,
		Ephemeral: false, Profiles: []string{placement}, Stateful: inst.Stateful, Description: inst.Description}
	if err := c.Update(ctx, name, put, etag); err != nil {
		return err
	}
	if inst.Type == incus.TypeVM {
		if err := c.Start(ctx, name); err != nil {
			return err
		}
		return vm.ResetVMMachineID(ctx, c, name)
	}
	if err := c.ResetMachineID(ctx, name); err != nil {
		return err
	}
	return c.Start(ctx, name)
}

func importErr(e *env, name string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: box %q was not imported (nothing is left of it)", name)
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return fmt.Errorf("import %q refused, nothing is left of it: %w", name, err)
	}
	return vmErr(e, fmt.Errorf("could not import box %q (nothing is left of it): %w", name, err))
}
