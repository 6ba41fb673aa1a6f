package vm

// box new for a vm box: a mint from a template (and profile), or a clone of a box or
// one of its snapshots. The plan is decided without incusd; the launch is Run's.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/progress"
	"github.com/heavy-duty/box/profiles"
)

// NewPlan is what box new will do, decided without incusd: a mint (Pool still to be
// read off the placement profile), or a clone; and the launch's time box.
type NewPlan struct {
	Mint    incus.Mint
	Clone   *incus.Clone
	Timeout time.Duration
}

// Plan checks everything that can be checked without incusd: names, flags, the
// profile, the template, resource precedence.
func (b Backend) Plan(r backend.MintRequest, now time.Time) (*NewPlan, error) {
	// A vm box's network is the box bridge; it has no host working directory or agent.
	if err := backend.RefuseSettings(r.Given, profiles.BackendVM, false, "network", "workdir", "ssh-host"); err != nil {
		return nil, err
	}
	if r.Name == "" {
		return nil, backend.ErrNoName
	}
	if err := incus.ValidateName(r.Name); err != nil {
		return nil, errs.Usage("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	timeout := r.Timeout
	if v := b.Getenv(EnvLaunchTimeout); v != "" && !slices.Contains(r.Given, "timeout") {
		d, err := launchTimeout(v)
		if err != nil {
			return nil, err
		}
		timeout = d
	}
	if timeout <= 0 {
		return nil, errs.Usage("for example --timeout 10m", "--timeout must be positive")
	}
	o := NewOptions{Name: r.Name, Template: r.Template, CPU: r.CPU, Memory: r.Memory, Disk: r.Disk, VM: r.VM, Container: r.Container}
	o.FromEnv(b.Getenv)
	placement := Placement(b.Getenv)
	if r.From != "" {
		if err := CloneRefusals(r.Given); err != nil {
			return nil, err
		}
		// Refused by name, not silently dropped: the scripting form of the resource
		// flags does not reach a clone, which keeps its source's resources.
		for _, kv := range [][2]string{{EnvCPU, o.EnvCPU}, {EnvMemory, o.EnvMemory}, {EnvDisk, o.EnvDisk}} {
			if kv[1] != "" {
				b.note("%s=%s is not applied to a clone: it keeps its source's resources ('box incus %s -- config set limits.*' changes them)", kv[0], kv[1], o.Name)
			}
		}
		src, snap, err := backend.ParseFrom(r.From)
		if err != nil {
			return nil, err
		}
		return &NewPlan{Clone: &incus.Clone{Name: o.Name, From: src, Snapshot: snap, Profile: placement, Created: now}, Timeout: timeout}, nil
	}
	var prof *profiles.Profile
	if r.Profile != "" {
		p, err := backend.LoadProfile(b.ConfigHome, r.Profile)
		if err != nil {
			return nil, err
		}
		prof = p
	}
	if err := CheckProfile(prof); err != nil {
		return nil, b.err(err)
	}
	name := TemplateName(o.Template, prof)
	tmpl, err := backend.LoadTemplate(b.ConfigHome, name)
	if err != nil {
		var h interface{ Hint() string }
		if errors.As(err, new(*backend.NoSuchError)) {
			return nil, err
		}
		if errors.As(err, &h) {
			return nil, err
		}
		return nil, errs.WithHint(err, "fix or remove the template named above")
	}
	if _, _, err := PristinePolicy(b.Getenv(EnvSnapshotPristine), ""); err != nil {
		return nil, err
	}
	if err := profiles.CheckKeys(profiles.UseVM, prof, tmpl); err != nil {
		return nil, err
	}
	mint, err := MintPlan(o, prof, tmpl, placement, "", now)
	if err != nil {
		return nil, b.err(err)
	}
	if note := PidsNote(prof, mint.VM); note != "" {
		fmt.Fprintf(b.Stderr, "box: warning: %s\n", note)
	}
	return &NewPlan{Mint: mint, Timeout: timeout}, nil
}

// Mint is box new for a vm box: it plans, checks the name and the source, and hands
// the launch to Run.
func (b Backend) Mint(r backend.MintRequest) error {
	plan, err := b.Plan(r, time.Now())
	if err != nil {
		return err
	}
	mint, timeout := plan.Mint, plan.Timeout

	ctx, stop := b.Context()
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := b.Client()
	defer c.Close()
	p := b.progress()
	defer p.Done()

	if _, _, err := c.Instance(ctx, r.Name); err == nil {
		return &backend.TakenError{Name: r.Name, Verb: "new", Err: fmt.Errorf("an instance named %q already exists", r.Name)}
	} else if !incus.IsNotFound(err) {
		return b.err(err)
	}

	l := Launch{Name: r.Name, Clone: plan.Clone != nil, Timeout: timeout, Pristine: b.Getenv(EnvSnapshotPristine)}
	if cl := plan.Clone; cl != nil {
		src, err := b.Resolve(ctx, c, cl.From)
		if err != nil {
			return err
		}
		cl.IsolatedIDs = src.Type != incus.TypeVM && !protectionOff(ProtIsolatedIDs)
		if cl.Snapshot != "" {
			if err := b.NeedSnapshot(ctx, c, cl.From, cl.Snapshot); err != nil {
				return err
			}
		}
		if l.Req, err = incus.CloneRequest(*cl); err != nil {
			return b.err(err)
		}
		p.Step("cloning %s into %s", r.From, r.Name)
	} else {
		if mint.Pool, err = b.PlacementPool(ctx, c, Placement(b.Getenv)); err != nil {
			return err
		}
		l.Pool = mint.Pool
		if l.Req, err = incus.MintRequest(mint); err != nil {
			return b.err(err)
		}
		kind := "container"
		if mint.VM {
			kind = "VM"
		}
		p.Step("creating %s (%s, template %s, image %s)", r.Name, kind, mint.Template, mint.Image)
	}
	res, err := Run(ctx, c, l, b.Reporter(p))
	if err != nil {
		return b.launchErr(r.Name, timeout, err)
	}
	p.Done()
	s := Summarize(res.Inst, nil)
	b.note("%s is ready (%s, %s, user %s, %s): box shell %s",
		r.Name, s.Type, res.IPv4, s.User, p.Elapsed().Round(100*time.Millisecond), r.Name)
	return nil
}

// Reporter is how the launch speaks: the verb's progress line, warnings and notes.
func (b Backend) Reporter(p *progress.Line) Reporter {
	return Reporter{
		Progress: p,
		Warn:     func(format string, a ...any) { fmt.Fprintf(b.Stderr, "box: warning: "+format+"\n", a...) },
		Note:     func(format string, a ...any) { b.note(format, a...) },
	}
}

// launchTimeout reads $BOX_LAUNCH_TIMEOUT: whole seconds (upstream's form), or a
// duration such as 10m.
func launchTimeout(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, errs.Usage("for example BOX_LAUNCH_TIMEOUT=600 (seconds) or 10m", "%s=%q: want a positive number of seconds or a duration", EnvLaunchTimeout, v)
}

// launchErr words a failed launch: a step that failed (the box was removed), or a box
// kept on purpose (its lease or cloud-init did not come), which says so itself.
func (b Backend) launchErr(name string, timeout time.Duration, err error) error {
	var le *Error
	if !errors.As(err, &le) {
		return b.err(err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errs.WithHint(fmt.Errorf("could not %s box %q within %s; it was removed", le.What, name, timeout), "a first launch may fetch the image: try a longer --timeout")
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted: box %q was removed", name)
	}
	return b.err(err)
}

// PlacementPool is the storage pool of the placement profile's root disk, where a new
// box's disk goes; a missing profile says how to make it.
func (b Backend) PlacementPool(ctx context.Context, c *incus.Client, placement string) (string, error) {
	pool, err := c.RootPool(ctx, placement)
	if err != nil {
		if incus.IsNotFound(err) && c.RemoteName() != "" {
			return "", &PlacementError{placement, c.RemoteName()}
		}
		if incus.IsNotFound(err) {
			return "", &PlacementError{Profile: placement}
		}
		return "", b.err(err)
	}
	return pool, nil
}
