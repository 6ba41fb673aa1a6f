package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/progress"
)

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

// Import is box import: the box exported to file, under name ("" keeps the exported
// box's), settled on this host and started. bwrapTaken says whether a bwrap box holds a
// name (a name is unique across backends); it is asked before anything is uploaded.
func (b Backend) Import(file, name string, now time.Time, bwrapTaken func(name string) (bool, error)) error {
	nameFree := func(name string) error {
		if taken, err := bwrapTaken(name); err != nil || !taken {
			return err
		}
		return &backend.TakenError{Name: name, Verb: "import", File: file,
			Err: fmt.Errorf("a bwrap box named %q already exists: nothing was imported", name)}
	}
	if name != "" {
		if err := incus.ValidateName(name); err != nil {
			return b.err(err)
		}
		if err := nameFree(name); err != nil {
			return err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return &OpenError{err}
	}
	defer f.Close()
	head := &recorder{r: f}
	idx, err := ReadBackupIndex(head, file)
	if err != nil {
		return err
	}
	if err := CheckIndex(idx); err != nil {
		return err
	}
	target := name
	if target == "" {
		target = idx.Name
		if err := incus.ValidateName(target); err != nil {
			return errs.Usage("name the box with --name", "the export's instance name: %s", err)
		}
	}

	if err := nameFree(target); err != nil {
		return err
	}
	ctx, stop := b.Context()
	defer stop()
	c := b.Client()
	defer c.Close()
	if _, _, err := c.Instance(ctx, target); err == nil {
		return &backend.TakenError{Name: target, Verb: "import", File: file,
			Err: fmt.Errorf("an instance named %q already exists: nothing was imported", target)}
	} else if !incus.IsNotFound(err) {
		return b.err(err)
	}
	placement := Placement(b.Getenv)
	pool, err := b.PlacementPool(ctx, c, placement)
	if err != nil {
		return err
	}

	p := b.progress()
	defer p.Done()
	cnt := p.Count("uploading " + file)
	var whole io.Reader = io.MultiReader(bytes.NewReader(head.buf.Bytes()), f)
	var scan *checkedReader
	if !protectionOff("import-members") {
		scan = newCheckedReader(whole, file)
		whole = scan
	}
	body := &onEOF{r: io.TeeReader(whole, cnt),
		f: func() { p.Step("incusd is unpacking %s (%s)", target, progress.Size(cnt.N())) }}
	// From here on a failure must not leave a half box behind.
	err = c.ImportBackup(ctx, body, target, pool)
	if scan != nil {
		if refused := scan.Refused(); refused != nil {
			Discard(c, target) // incusd received no whole export: normally nothing to discard
			return b.importErr(target, refused)
		}
	}
	if err != nil {
		Discard(c, target)
		return b.importErr(target, err)
	}
	if err := settleImport(ctx, c, target, placement, now); err != nil {
		var nb *NotBoxExportError
		if errors.As(err, &nb) {
			// Created by this import under a name that was free: ours to delete,
			// though discard would not touch an untagged instance.
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.Delete(dctx, target)
			cancel()
		}
		Discard(c, target)
		return b.importErr(target, err)
	}
	p.Done()
	b.note("imported %s from %s: placed on %s, fresh MAC and machine ID, started; logins in it came back with it: box shell %s",
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
		return &NotBoxExportError{Name: name}
	}
	if err := CheckShape("instance", inst.Config, inst.Devices); err != nil {
		return err
	}
	// box never stops or snapshots a box statefully: saved state is process memory that
	// a start (or a restore) would load on this host, through CRIU or QEMU.
	if inst.Stateful {
		return &OffStackError{"instance", "a saved running state (stateful)"}
	}
	snaps, err := c.Snapshots(ctx, name)
	if err != nil {
		return err
	}
	for _, s := range snaps {
		if s.Stateful {
			return &OffStackError{"snapshot " + s.Name, "a saved running state (stateful)"}
		}
		if err := CheckShape("snapshot "+s.Name, s.Config, s.Devices); err != nil {
			return err
		}
	}
	cfg := inst.Config
	for _, k := range HostIdentityKeys(cfg) {
		delete(cfg, k)
	}
	for k, v := range ImportStamp(cfg, now) {
		cfg[k] = v
	}
	// A container gets a host uid range of its own here as at a mint, whatever the
	// export said (an export of a box minted before box set it has none); Incus picks
	// the range and shifts the files on the start below.
	if inst.Type != incus.TypeVM && !protectionOff(ProtIsolatedIDs) {
		cfg[incus.KeyIsolatedIDs] = "true"
	}
	// Which host port opens a door into a box is this host's decision: exposures stay
	// behind ('box expose' them again).
	exp, _ := Exposures(inst.Devices)
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
		return ResetVMMachineID(ctx, c, name)
	}
	if !protectionOff(ProtIsolatedIDs) {
		if err := OwnRange(ctx, c, name); err != nil {
			return err
		}
	}
	if err := c.ResetMachineID(ctx, name); err != nil {
		return err
	}
	return c.Start(ctx, name)
}

func (b Backend) importErr(name string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: box %q was not imported (nothing is left of it)", name)
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return fmt.Errorf("import %q refused, nothing is left of it: %w", name, err)
	}
	return b.err(fmt.Errorf("could not import box %q (nothing is left of it): %w", name, err))
}
