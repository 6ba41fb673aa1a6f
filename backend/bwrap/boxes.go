package bwrap

// The bwrap backend of the box verbs: persistent, named bwrap boxes (dirbox) launched
// through the same Session as box run (Request.Persistent), so a box is never weaker
// than a throwaway sandbox. One file per verb: boxes_new.go, boxes_launch.go,
// boxes_snapshot.go, boxes_rm.go; the lookups and the read-only verbs are here.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/bwrap/dirbox"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/progress"
	"github.com/heavy-duty/box/internal/termtext"
	"github.com/heavy-duty/box/profiles"
)

// Boxes implements backend.Backend for bwrap boxes. Its fields are all it may use of
// the outside world; it knows no flags (the CLI refuses those by name before Mint).
type Boxes struct {
	Store dirbox.Store
	// Session is the launches' streams and the operator's session (Yes is set per
	// launch); its Stderr also takes the verbs' notes.
	Session Session
	// ConfigHome is where the profiles and templates are (box new loads them).
	ConfigHome string
	// User is the operator's login name, as box list shows it.
	User string
	// Quiet: no progress line, no closing notes.
	Quiet bool
	// RemoteOnly: a remote is in force, which holds vm boxes only: no name is a bwrap box.
	RemoteOnly bool
	// NameTaken is the one name-taken check across every backend (backend.Registry's
	// Taken): a *backend.NameTakenError, or nil when the name is free.
	NameTaken func(name string) error
	// Confirm asks the operator a y/N question (unless force); refused is the error's
	// wording when nobody answers yes.
	Confirm func(force bool, question, refused string) error
	// Warn says a warning about the box's use, with the CLI's hint (nil: the message alone).
	Warn func(error)

	held *dirbox.Box // the box the verb's name was found as (Holding): not looked up again
}

var _ backend.Backend = Boxes{}

func (Boxes) Kind() string { return profiles.BackendBwrap }

// Holding is be with the box b already looked up: a verb on b's name uses it rather
// than looking it up again.
func (be Boxes) Holding(b *dirbox.Box) Boxes {
	be.held = b
	return be
}

// Find finds the bwrap box name. It returns nil and no error when no directory has the
// name (the verb goes on with the vm backend), and an error for a directory that merely
// looks like a box: box never touches it, and never hands its name to incusd.
func (be Boxes) Find(name string) (*dirbox.Box, error) {
	if be.held != nil && be.held.Name == name {
		return be.held, nil
	}
	if dirbox.ValidName(name) != nil || be.RemoteOnly { // a remote holds vm boxes only
		return nil, nil // the vm code words the refusal
	}
	b, err := be.Store.Lookup(name)
	if errors.Is(err, dirbox.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// Lookup is the bwrap box name, or an error saying there is none.
func (be Boxes) Lookup(name string) (*dirbox.Box, error) {
	b, err := be.Find(name)
	if err == nil && b == nil {
		err = &NotFoundError{Name: name}
	}
	return b, err
}

// Taken reports whether the bwrap store has anything called name (a box or not), as
// its lookup sees it: a name it cannot look at is an error, not a free name.
func (be Boxes) Taken(name string) (bool, error) {
	_, err := os.Lstat(filepath.Join(be.Store.Root, name))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	return err == nil, err
}

// nameFree refuses a name taken by a box (or anything) of either backend.
func (be Boxes) nameFree(name string) error {
	var taken *backend.NameTakenError
	err := be.NameTaken(name)
	switch {
	case !errors.As(err, &taken):
		return err
	case taken.Backend == profiles.BackendBwrap:
		if _, err := be.Find(name); err != nil {
			return err // a lookalike directory: say so
		}
		return &backend.TakenError{Name: name, Err: fmt.Errorf("a bwrap box named %q already exists", name)}
	}
	return &backend.TakenError{Name: name, Across: true, Err: fmt.Errorf("an instance named %q already exists in incusd", name)}
}

// note prints a verb's closing line on stderr, unless Quiet.
func (be Boxes) note(format string, a ...any) {
	if !be.Quiet {
		fmt.Fprintf(be.Session.Stderr, "box: "+format+"\n", a...)
	}
}

// progress is the progress line of a long copy on stderr.
func (be Boxes) progress() *progress.Line { return progress.New(be.Session.Stderr, be.Quiet) }

// copyCost words what a copy did.
func copyCost(cs dirbox.CopyStats) string {
	s := fmt.Sprintf("%d files, %.1f MiB", cs.Files, float64(cs.Bytes)/(1<<20))
	if cs.Hardlinked > 0 {
		s += fmt.Sprintf(", %d hard links kept", cs.Hardlinked)
	}
	if cs.Reflinked > 0 {
		s += fmt.Sprintf(", %d reflinked", cs.Reflinked)
	}
	return s
}

// maxLeftOut bounds the names warnLeftOut lists.
const maxLeftOut = 10

// warnLeftOut says what a copy of the box's state left out (sockets, device nodes: a
// copy cannot carry them), by name, whatever Quiet: the copy is not the box's whole state.
// The names are the sandbox's choice, so their control characters are escaped.
func (be Boxes) warnLeftOut(what string, cs dirbox.CopyStats) {
	if len(cs.Skipped) == 0 {
		return
	}
	names, more := cs.Skipped, ""
	if len(names) > maxLeftOut {
		names, more = names[:maxLeftOut], fmt.Sprintf(" and %d more", len(names)-maxLeftOut)
	}
	fmt.Fprintf(be.Session.Stderr, "box: warning: %s left out %d socket(s) or device node(s) of the box's state, which a copy cannot carry: %s%s\n",
		what, len(cs.Skipped), termtext.Escape(strings.Join(names, ", "), false), more)
}

// boxState is a bwrap box's state: Running while a sandbox (or a verb) holds it.
func boxState(b *dirbox.Box) string {
	if b.Busy() {
		return "Running"
	}
	return "Idle"
}

func (be Boxes) summary(b *dirbox.Box) backend.Summary {
	return backend.Summary{
		Name: b.Name, State: boxState(b), Type: profiles.BackendBwrap, Backend: profiles.BackendBwrap,
		Template: b.Template.Name, User: be.User, Origin: b.Origin, OriginFrom: b.OriginFrom,
		Created: b.Created.UTC().Format(time.RFC3339), Profile: b.Profile.Name, Network: b.Network, Workdir: b.Workdir,
	}
}

func (be Boxes) List() ([]backend.Summary, error) {
	list, err := be.Store.List()
	if err != nil {
		return nil, err
	}
	out := make([]backend.Summary, 0, len(list))
	for _, b := range list {
		out = append(out, be.summary(b))
	}
	return out, nil
}

func (be Boxes) Info(name string) (backend.Info, error) {
	b, err := be.Lookup(name)
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
	if out.Exposed, err = exposuresOf(b); err != nil { // publish_box.go
		return backend.Info{}, err
	}
	profilePorts(b, &out) // publish_box.go
	return out, nil
}

// Start: a bwrap box has no running state of its own to start: refused.
func (be Boxes) Start(name string) error {
	if _, err := be.Lookup(name); err != nil {
		return err
	}
	return &errs.UsageError{Err: &StartError{Name: name}}
}

// StartError: box start of a bwrap box, which has no running state of its own: its
// sandbox runs while a session (box shell, box exec) does. A usage error.
type StartError struct{ Name string }

func (e *StartError) Error() string {
	return fmt.Sprintf("box %s is a bwrap box: it is not started, it runs while box shell or box exec does", e.Name)
}

// StopInUseError: box stop of a bwrap box a session holds: the sandbox is its
// command's to end, not box stop's.
type StopInUseError struct{ Name string }

func (e *StopInUseError) Error() string {
	return fmt.Sprintf("box stop does not end a bwrap box's sandbox: %s is in use", e.Name)
}

// Stop: nothing to stop when idle; a running sandbox is its command's to end (so
// timeout and force change nothing).
func (be Boxes) Stop(name string, _ time.Duration, _ bool) error {
	b, err := be.Lookup(name)
	if err != nil {
		return err
	}
	if !b.Busy() {
		fmt.Fprintf(be.Session.Stderr, "box: %s is not running (a bwrap box runs only while box shell or box exec does)\n", b.Name)
		return nil
	}
	return &StopInUseError{Name: b.Name}
}
