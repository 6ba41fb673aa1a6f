package main

// The bwrap backend of the box verbs: persistent, named bwrap boxes (backend/bwrap/dirbox)
// launched through the same resolver as box run (bwrap.Resolve with Request.Persistent),
// so a box is never weaker than a throwaway sandbox.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/backend/vm"
	"github.com/heavy-duty/box/policy"
	"github.com/heavy-duty/box/profiles"
	"github.com/heavy-duty/box/templates"
)

// bwrapBackend implements backend.Backend for bwrap boxes.
type bwrapBackend struct{ e *env }

var _ backend.Backend = bwrapBackend{}

func (bwrapBackend) Kind() string { return profiles.BackendBwrap }

// vmOnlyNewFlags are box new's flags a bwrap box cannot honour.
var vmOnlyNewFlags = []string{"cpu", "memory", "disk", "vm", "container", "timeout"}

// refuseFlags refuses the named flags if given, naming them and who does not take them.
func refuseFlags(given, bad []string, who, hint string) error {
	var hit []string
	for _, g := range given {
		for _, b := range bad {
			if g == b {
				hit = append(hit, "--"+g)
			}
		}
	}
	if len(hit) == 0 {
		return nil
	}
	return usagef(hint, "%s cannot take %s", who, strings.Join(hit, ", "))
}

// nameFree refuses a name taken by a box (or anything) of either backend.
func nameFree(e *env, name string) error {
	var taken *backend.NameTakenError
	err := registry(e).Taken(name)
	switch {
	case !errors.As(err, &taken):
		return err
	case taken.Backend == profiles.BackendBwrap:
		if _, err := bwrapBox(e, name); err != nil {
			return err // a lookalike directory: say so
		}
		return withHint(fmt.Errorf("a bwrap box named %q already exists", name), "pick another name; 'box list' shows the boxes")
	}
	return withHint(fmt.Errorf("an instance named %q already exists in incusd", name), "pick another name: a name is unique across both backends ('box list' shows the boxes)")
}

// boxWorkdir resolves --workdir (default: the current directory) as box run does.
func boxWorkdir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", usagef("name an existing directory", "--workdir: %s", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", usagef("name an existing directory", "--workdir %s: not a directory", dir)
	}
	return real, nil
}

// Mint makes a bwrap box (box new --backend bwrap), or clones one (--from).
func (be bwrapBackend) Mint(r backend.MintRequest) error {
	e, o, given := be.e, newOptionsOf(r), r.Given
	if err := refuseFlags(given, vmOnlyNewFlags, "a bwrap box", "resources, instance types and the launch timeout are vm settings: drop them, or use --backend vm"); err != nil {
		return err
	}
	if o.Name == "" {
		return usagef("run 'box new --help' for usage", "box new needs --name NAME")
	}
	if err := dirbox.ValidName(o.Name); err != nil {
		return usagef("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	if o.from != "" {
		return be.clone(o, given)
	}
	var wd string
	var err error
	if wd, err = boxWorkdir(o.workdir); err != nil {
		return err
	}
	prof, err := loadProfile(e, profileName(e, o.profile))
	if err != nil {
		return err
	}
	tmplName := prof.Template
	if o.Template != "" {
		tmplName = o.Template
	}
	tmpl, err := loadTemplate(e, tmplName)
	if err != nil {
		return err
	}
	network := string(prof.Network)
	if o.network != "" {
		if err := profiles.ValidNetwork(o.network); err != nil {
			return usagef("the tiers are "+policy.TierList("and"), "--network: %s", err)
		}
		network = o.network
	}
	if err := profiles.CheckKeys(profiles.UseBox, prof, tmpl); err != nil {
		return err
	}
	if err := nameFree(e, o.Name); err != nil {
		return err
	}
	st := dirbox.Stamp{
		Name: o.Name, Profile: prof, Template: tmpl, Network: network, Workdir: wd,
		Created: time.Now().UTC(), Origin: "mint",
	}
	// Resolve it now as it will be launched, so every refusal (a home as the working
	// directory, a profile mount box refuses...) comes before anything is made.
	if err := be.check(st); err != nil {
		return err
	}
	b, _, err := e.boxStore().Create(st, nil)
	if err != nil {
		return err
	}
	note(e, "%s is ready (bwrap, template %s, network %s, working directory %s): box shell %s", b.Name, tmpl.Name, network, wd, b.Name)
	return nil
}

func (be bwrapBackend) clone(o *newOptions, given []string) error {
	e := be.e
	if err := refuseFlags(given, []string{"template", "profile", "network"}, "a clone", "a clone is a copy of its source: drop them, or mint a new box without --from"); err != nil {
		return err
	}
	srcName, snap, err := vm.ParseFrom(o.from)
	if err != nil {
		return vmErr(e, err)
	}
	src, err := bwrapBox(e, srcName)
	if err != nil {
		return err
	}
	if src == nil {
		return withHint(fmt.Errorf("no bwrap box named %q", srcName), "run 'box list' to see the boxes; a vm box is cloned without --backend bwrap")
	}
	st := src.Stamp
	st.Name, st.ID, st.Created, st.Origin, st.OriginFrom = o.Name, "", time.Now().UTC(), "clone", o.from
	if o.workdir != "" {
		if st.Workdir, err = boxWorkdir(o.workdir); err != nil {
			return err
		}
	}
	if err := nameFree(e, o.Name); err != nil {
		return err
	}
	if err := be.check(st); err != nil {
		return err
	}
	p := newProgress(e)
	p.Step("cloning %s into %s", o.from, o.Name)
	_, cs, err := e.boxStore().Clone(src, snap, st)
	p.Done()
	if err != nil {
		return err
	}
	note(e, "%s is ready (a clone of %s: %s, %s): box shell %s", o.Name, o.from, copyCost(cs), p.Elapsed().Round(time.Millisecond), o.Name)
	return nil
}

// copyCost words what a copy did.
func copyCost(cs dirbox.CopyStats) string {
	s := fmt.Sprintf("%d files, %.1f MiB", cs.Files, float64(cs.Bytes)/(1<<20))
	if cs.Hardlinked > 0 {
		s += fmt.Sprintf(", %d hard links kept", cs.Hardlinked)
	}
	if cs.Reflinked > 0 {
		s += fmt.Sprintf(", %d reflinked", cs.Reflinked)
	}
	if len(cs.Skipped) > 0 {
		s += fmt.Sprintf(", %d sockets or devices left out", len(cs.Skipped))
	}
	return s
}

// boxRequest is the resolver's request for a launch in b, once its stamp's keys are
// checked.
func boxRequest(b *dirbox.Box, command []string, allowRoot bool, allow []string) (bwrap.Request, error) {
	if err := profiles.CheckKeys(profiles.UseBox, b.Profile, b.Template); err != nil {
		return bwrap.Request{}, err
	}
	return bwrap.Request{
		Profile: b.Profile, Template: b.Template, Network: b.Network,
		Command: command, AllowRoot: allowRoot, Allow: allow,
		Persistent: &bwrap.Persistent{Name: b.Name, Home: b.Home(), Instance: b.Instance(), Workdir: b.Workdir},
	}, nil
}

// check resolves the stamp as a launch would, before the box is made (its warnings wait
// for the launch).
func (be bwrapBackend) check(st dirbox.Stamp) error {
	b := &dirbox.Box{Dir: filepath.Join(be.e.boxStore().Root, st.Name), Stamp: st}
	req, err := boxRequest(b, []string{"sh"}, false, nil)
	if err != nil {
		return err
	}
	s := be.e.session(false)
	s.Stderr = io.Discard
	_, err = be.plan(s, b, req)
	return err
}

// plan resolves req, a launch in b (boxRequest): the stamped profile, template and tier,
// the box's home, instance directory and working directory; everything else exactly as
// box run.
func (be bwrapBackend) plan(s *bwrap.Session, b *dirbox.Box, req bwrap.Request) (*bwrap.Plan, error) {
	p, err := s.Resolve(req)
	return p, boxErr(b, err)
}

// boxErr says, of a failure to gather the host's facts, which directory b is bound to.
func boxErr(b *dirbox.Box, err error) error {
	var ge *bwrap.GatherError
	if errors.As(err, &ge) {
		return withHint(fmt.Errorf("box %s: %w", b.Name, ge.Err), "the box is bound to "+b.Workdir+"; clone it elsewhere with box new --name NAME --from "+b.Name+" --workdir DIR")
	}
	return err
}

// launch runs command in the box, holding its lock (shared) for as long as it runs.
func (be bwrapBackend) launch(name string, command []string, l launchFlags) error {
	b, err := be.lookup(name)
	if err != nil {
		return err
	}
	unlock, err := b.Lock(false)
	if err != nil {
		return err
	}
	defer unlock()
	req, err := boxRequest(b, command, l.allowRoot, l.allow)
	if err != nil {
		return err
	}
	out, err := be.e.session(l.yes).Run(req)
	return exitCode(out.Code, boxErr(b, err))
}

func (be bwrapBackend) lookup(name string) (*dirbox.Box, error) {
	b, err := bwrapBox(be.e, name)
	if err == nil && b == nil {
		err = withHint(fmt.Errorf("no bwrap box named %q", name), "run 'box list' to see the boxes")
	}
	return b, err
}

// Enter opens a login shell in the box: bash if the host has it, else sh.
func (be bwrapBackend) Enter(name string, r backend.LaunchRequest) error {
	l := launchFlagsOf(r)
	shell := "sh"
	if _, err := exec.LookPath("bash"); err == nil {
		shell = "bash"
	}
	return be.launch(name, []string{shell, "-l"}, l)
}

func (be bwrapBackend) Exec(name string, cmd []string, l backend.LaunchRequest) error {
	return be.launch(name, cmd, launchFlagsOf(l))
}

func (be bwrapBackend) Snapshot(name, label string) (string, error) {
	b, err := be.lookup(name)
	if err != nil {
		return "", err
	}
	if err := dirbox.ValidLabel(label); err != nil {
		return "", usagef("labels are up to 63 characters, without '/', spaces or a leading dot", "%s", err)
	}
	p := newProgress(be.e)
	p.Step("taking snapshot %s/%s", name, label)
	cs, err := b.TakeSnapshot(label, time.Now())
	p.Done()
	if err != nil {
		return "", err
	}
	note(be.e, "snapshot %s/%s taken (%s, %s)", name, label, copyCost(cs), p.Elapsed().Round(time.Millisecond))
	return label, nil
}

func (be bwrapBackend) Restore(name, snap string, force bool) error {
	b, err := be.lookup(name)
	if err != nil {
		return err
	}
	snaps, err := b.Snapshots()
	if err != nil {
		return err
	}
	found := false
	var have []string
	for _, s := range snaps {
		found = found || s.Name == snap
		have = append(have, s.Name)
	}
	if !found {
		return &dirbox.NoSnapshotError{Box: name, Name: snap, Have: have}
	}
	if b.Busy() {
		return &dirbox.BusyError{Name: name}
	}
	if err := ask(be.e, force, fmt.Sprintf("roll box %s back to %s? everything in its home since is lost", name, snap), "not restored"); err != nil {
		return err
	}
	p := newProgress(be.e)
	p.Step("restoring %s to %s", name, snap)
	cs, err := b.Restore(snap)
	p.Done()
	if err != nil {
		return err
	}
	note(be.e, "%s restored to %s (%s)", name, snap, copyCost(cs))
	return nil
}

func (be bwrapBackend) Rename(old, nu string) error {
	b, err := be.lookup(old)
	if err != nil {
		return err
	}
	if err := dirbox.ValidName(nu); err != nil {
		return usagef("box names are letters, digits and hyphens, starting with a letter", "%s", err)
	}
	if err := nameFree(be.e, nu); err != nil {
		return err
	}
	if _, err := be.e.boxStore().Rename(b, nu); err != nil {
		return err
	}
	fmt.Fprintf(be.e.stderr, "box: %s renamed to %s\n", old, nu)
	return nil
}

func (be bwrapBackend) Delete(name string, force bool) error {
	b, err := be.lookup(name)
	if err != nil {
		return err
	}
	if b.Busy() {
		return &dirbox.BusyError{Name: name}
	}
	snaps, err := b.Snapshots()
	if err != nil {
		return err
	}
	what := fmt.Sprintf("delete bwrap box %s (its home, logins and tools)", name)
	if len(snaps) > 0 {
		what += fmt.Sprintf(" and its %d snapshot(s)", len(snaps))
	}
	if err := ask(be.e, force, what+"?", "not deleted"); err != nil {
		return err
	}
	if err := be.e.boxStore().Remove(b); err != nil {
		return err
	}
	fmt.Fprintf(be.e.stderr, "box: %s deleted\n", name)
	return nil
}

// bwrapState is a bwrap box's state: Running while a sandbox (or a verb) holds it.
func bwrapState(b *dirbox.Box) string {
	if b.Busy() {
		return "Running"
	}
	return "Idle"
}

func (be bwrapBackend) summary(b *dirbox.Box) backend.Summary {
	return backend.Summary{
		Name: b.Name, State: bwrapState(b), Type: profiles.BackendBwrap, Backend: profiles.BackendBwrap,
		Template: b.Template.Name, User: be.e.userName(), Origin: b.Origin, OriginFrom: b.OriginFrom,
		Created: b.Created.UTC().Format(time.RFC3339), Profile: b.Profile.Name, Network: b.Network, Workdir: b.Workdir,
	}
}

func (be bwrapBackend) List() ([]backend.Summary, error) {
	list, err := be.e.boxStore().List()
	if err != nil {
		return nil, err
	}
	out := make([]backend.Summary, 0, len(list))
	for _, b := range list {
		out = append(out, be.summary(b))
	}
	return out, nil
}

func (be bwrapBackend) Info(name string) (backend.Info, error) {
	b, err := be.lookup(name)
	if err != nil {
		return backend.Info{}, err
	}
	snaps, err := b.Snapshots()
	if err != nil {
		return backend.Info{}, err
	}
	out := backend.Info{Summary: be.summary(b), Home: b.Home(), Snapshots: []backend.SnapshotInfo{}, Exposed: []backend.Exposure{}}
	for _, s := range snaps {
		out.Snapshots = append(out.Snapshots, backend.SnapshotInfo{Name: s.Name, Created: s.Created.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// printBwrapInfo is box info's table for a bwrap box.
func printBwrapInfo(e *env, info infoJSON) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("name", info.Name)
	row("backend", info.Backend)
	row("state", info.State)
	row("template", info.Template)
	row("profile", info.Profile)
	row("network", info.Network)
	row("workdir", info.Workdir)
	row("home", info.Home)
	origin := info.Origin
	if info.OriginFrom != "" {
		origin += " of " + info.OriginFrom
	}
	row("origin", origin)
	row("created", info.Created)
	var s []string
	for _, sn := range info.Snapshots {
		s = append(s, sn.Name)
	}
	if len(s) == 0 {
		row("snapshots", "none")
	} else {
		row("snapshots", strings.Join(s, ", "))
		row("clone one", fmt.Sprintf("box new --name NAME --from %s/%s", info.Name, s[len(s)-1]))
	}
	return tw.Flush()
}

// Start: a bwrap box has no running state of its own to start: refused.
func (be bwrapBackend) Start(name string) error {
	if _, err := be.lookup(name); err != nil {
		return err
	}
	return usagef("box shell "+name+" or box exec "+name+" -- COMMAND launches its sandbox",
		"box %s is a bwrap box: it is not started, it runs while box shell or box exec does", name)
}

// Stop: nothing to stop when idle; a running sandbox is its command's to end (so
// --timeout and --force change nothing).
func (be bwrapBackend) Stop(name string, _ time.Duration, _ bool) error {
	e := be.e
	b, err := be.lookup(name)
	if err != nil {
		return err
	}
	if !b.Busy() {
		fmt.Fprintf(e.stderr, "box: %s is not running (a bwrap box runs only while box shell or box exec does)\n", b.Name)
		return nil
	}
	return withHint(fmt.Errorf("box stop does not end a bwrap box's sandbox: %s is in use", b.Name),
		"end the command running in it (exit its shell, or Ctrl-C its box exec)")
}

// profileName is the profile a bwrap launch uses: the flag, else $BOX_PROFILE, else
// the default.
func profileName(e *env, flag string) string {
	for _, n := range []string{flag, e.getenv("BOX_PROFILE")} {
		if n != "" {
			return n
		}
	}
	return profiles.Default
}

// loadProfile and loadTemplate load by name with the CLI's hints.
func loadProfile(e *env, name string) (*profiles.Profile, error) {
	p, err := profiles.Load(name, profiles.Dir(e.configHome()))
	if err != nil && (errors.Is(err, profiles.ErrNotFound) || profiles.ValidName(name) != nil) {
		return nil, usagef("run 'box profiles' to list them", "%s", err)
	}
	return p, err
}

func loadTemplate(e *env, name string) (*templates.Template, error) {
	t, err := templates.Load(name, templates.Dir(e.configHome()))
	if err != nil && (errors.Is(err, templates.ErrNotFound) || templates.ValidName(name) != nil) {
		return nil, usagef("run 'box templates' to list them", "%s", err)
	}
	return t, err
}

// defaultLabel is a snapshot's label when none is given.
func defaultLabel() string { return "manual-" + strconv.FormatInt(time.Now().Unix(), 10) }
