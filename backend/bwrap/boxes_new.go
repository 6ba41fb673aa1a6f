package bwrap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/backend/bwrap/sshagent"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/profiles"
	"golang.org/x/sys/unix"
)

// NoWorkdirError: the working directory asked for is not an existing directory (Err is
// why it could not be resolved; nil: it is not a directory). The CLI words it.
type NoWorkdirError struct {
	Dir string
	Err error
}

func (e *NoWorkdirError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Dir + ": not a directory"
}
func (e *NoWorkdirError) Unwrap() error { return e.Err }

// NetworkError: the network tier asked for is not one. The CLI words it.
type NetworkError struct{ Err error }

func (e *NetworkError) Error() string { return e.Err.Error() }
func (e *NetworkError) Unwrap() error { return e.Err }

// Workdir resolves a box's working directory (default: the current directory) as box
// run does.
func Workdir(dir string) (string, error) {
	if dir == "" {
		// The kernel's path of the directory the shell is in, never $PWD resolved by
		// name: a sandbox live on a tree above can swap a link into that name, and the
		// box was then bound to the directory the link named (hostile review, session
		// 14). A box's sessions hold that path and refuse it once a link leads elsewhere
		// (launchguard.go).
		wd, err := unix.Getwd()
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &NoWorkdirError{Dir: dir, Err: err}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", &NoWorkdirError{Dir: dir}
	}
	return real, nil
}

// Mint makes a bwrap box (box new --backend bwrap), or clones one (From). The settings
// a bwrap box (or a clone) cannot honour are refused first, by name
// (backend.SettingsError), then a missing or bad name or source; r.Profile "" is the
// default profile.
func (be Boxes) Mint(r backend.MintRequest) error {
	// Resources, instance types and the launch timeout are vm settings.
	if err := backend.RefuseSettings(r.Given, profiles.BackendBwrap, false, "cpu", "memory", "disk", "vm", "container", "timeout"); err != nil {
		return err
	}
	if r.Name == "" {
		return backend.ErrNoName
	}
	if err := dirbox.ValidName(r.Name); err != nil {
		return err
	}
	if r.From != "" {
		// A clone is a copy of its source.
		if err := backend.RefuseSettings(r.Given, profiles.BackendBwrap, true, "template", "profile", "network", "ssh-host"); err != nil {
			return err
		}
		if _, _, err := backend.ParseFrom(r.From); err != nil {
			return err
		}
		return be.clone(r)
	}
	if r.Profile == "" {
		r.Profile = profiles.Default
	}
	wd, err := Workdir(r.Workdir)
	if err != nil {
		return err
	}
	prof, err := backend.LoadProfile(be.ConfigHome, r.Profile)
	if err != nil {
		return err
	}
	tmplName := prof.Template
	if r.Template != "" {
		tmplName = r.Template
	}
	tmpl, err := backend.LoadTemplate(be.ConfigHome, tmplName)
	if err != nil {
		return err
	}
	network := string(prof.Network)
	if r.Network != "" {
		if err := profiles.ValidNetwork(r.Network); err != nil {
			return &NetworkError{err}
		}
		network = r.Network
	}
	if err := profiles.CheckKeys(profiles.UseBox, prof, tmpl); err != nil {
		return err
	}
	if prof, err = stampSSHHosts(prof, r.SSHHosts); err != nil {
		return err
	}
	if err := be.nameFree(r.Name); err != nil {
		return err
	}
	st := dirbox.Stamp{
		Name: r.Name, Profile: prof, Template: tmpl, Network: network, Workdir: wd,
		Created: time.Now().UTC(), Origin: "mint",
	}
	// Resolve it now as it will be launched, so every refusal (a home as the working
	// directory, a profile mount box refuses...) comes before anything is made.
	if err := be.check(st); err != nil {
		return err
	}
	b, _, err := be.Store.Create(st, nil)
	if err != nil {
		return err
	}
	be.note("%s is ready (bwrap, template %s, network %s, working directory %s): box shell %s", b.Name, tmpl.Name, network, wd, b.Name)
	be.warnUnstartable(b.Name)
	return nil
}

// UnstartableError: a bwrap box was made where its sessions cannot start (no user
// namespace can be had here, Err says why); said at box new, not first at box shell.
type UnstartableError struct {
	Name string
	Err  error
}

func (e *UnstartableError) Error() string {
	return fmt.Sprintf("box %s is made, but no session of it can start here: %v", e.Name, e.Err)
}
func (e *UnstartableError) Unwrap() error { return e.Err }

// warnUnstartable tries, as a session's launch would (the cheap facts, then a trial
// sandbox, remembered per set of facts), whether a bwrap box can start here, and warns
// when it cannot: the box stays (the host may be fixed), but nobody learns it at the
// first session. The Landlock mode cannot run a box, so it is not offered.
func (be Boxes) warnUnstartable(name string) {
	bin, err := LookBwrap()
	if err == nil {
		facts := readUsernsSysctls()
		if err = usernsBefore(bin, facts); err == nil {
			err = usernsTrial(bin, usernsKey(bin, facts))
		}
	}
	if err == nil {
		return
	}
	var ue *UsernsError
	if errors.As(err, &ue) {
		ue.Box = true
	}
	w := &UnstartableError{Name: name, Err: err}
	if be.Warn != nil {
		be.Warn(w)
		return
	}
	fmt.Fprintf(be.Session.Stderr, "box: warning: %s\n", w)
}

func (be Boxes) clone(r backend.MintRequest) error {
	srcName, snap, _ := strings.Cut(r.From, "/")
	src, err := be.Find(srcName)
	if err != nil {
		return err
	}
	if src == nil {
		return &NotFoundError{Name: srcName, Clone: true}
	}
	st := src.Stamp
	st.Name, st.ID, st.Created, st.Origin, st.OriginFrom = r.Name, "", time.Now().UTC(), "clone", r.From
	if r.Workdir != "" {
		if st.Workdir, err = Workdir(r.Workdir); err != nil {
			return err
		}
	}
	if err := be.nameFree(r.Name); err != nil {
		return err
	}
	if err := be.check(st); err != nil {
		return err
	}
	p := be.progress()
	p.Step("cloning %s into %s", r.From, r.Name)
	_, cs, err := be.Store.Clone(src, snap, st)
	p.Done()
	if err != nil {
		return err
	}
	be.warnLeftOut("the clone "+r.Name+" of "+r.From, cs)
	be.note("%s is ready (a clone of %s: %s, %s): box shell %s", r.Name, r.From, copyCost(cs), p.Elapsed().Round(time.Millisecond), r.Name)
	be.warnUnstartable(r.Name)
	return nil
}

// check resolves the stamp as a launch would, before the box is made (its warnings wait
// for the launch).
func (be Boxes) check(st dirbox.Stamp) error {
	b := &dirbox.Box{Dir: filepath.Join(be.Store.Root, st.Name), Stamp: st}
	req, err := BoxRequest(b, []string{"sh"}, false, nil)
	if err != nil {
		return err
	}
	s := be.session(false)
	s.Stderr = io.Discard
	_, err = be.Plan(s, b, req)
	return err
}

// stampSSHHosts is prof with box new's --ssh-host destinations added to its ssh.hosts:
// the box's stamp carries them, so every box exec and box shell gets the same filtered
// agent. Without the profile's ssh (no keys chosen) they are refused, as box run does.
func stampSSHHosts(prof *profiles.Profile, hosts []string) (*profiles.Profile, error) {
	if len(hosts) == 0 {
		return prof, nil
	}
	for _, h := range hosts {
		if err := sshagent.CheckHost(h); err != nil {
			return nil, &errs.UsageError{Err: err}
		}
	}
	if prof.SSH == nil {
		return nil, errs.WithHint(ErrSSHNoKeys, "add ssh = { keys = [\"SHA256:...\"] } to a profile of yours (ssh-add -l lists the fingerprints), and make the box with --profile PROFILE")
	}
	p, ssh := *prof, *prof.SSH
	ssh.Hosts = append(slices.Clone(ssh.Hosts), hosts...)
	p.SSH = &ssh
	return &p, nil
}
