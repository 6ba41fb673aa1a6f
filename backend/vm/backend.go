package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/heavy-duty/box/backend"
	"github.com/heavy-duty/box/backend/incus"
	"github.com/heavy-duty/box/internal/errs"
	"github.com/heavy-duty/box/internal/progress"
)

// Backend is the vm side of the box verbs, one file per verb. What it needs of the
// environment comes as fields, so the CLI (or a test) decides where it talks and writes.
type Backend struct {
	// Client is a client for incusd: the local socket, or a remote's.
	Client func() *incus.Client
	// Context is a verb's context (the CLI's is cancelled by Ctrl-C).
	Context func() (context.Context, context.CancelFunc)
	// Getenv reads the environment (the placement profile's name, $BOX_PLACEMENT).
	Getenv func(string) string
	// Socket is the local incusd socket's path, for messages.
	Socket string
	// ConfigHome is where the operator's templates and profiles are (box new).
	// VMExpected: the operator could have vm boxes here (nil: yes). A list without
	// incusd warns only then.
	VMExpected func() bool
	ConfigHome string
	// Stdout and Stderr are the verb's output; Quiet silences progress and notes.
	Stdout, Stderr io.Writer
	Quiet          bool
	// Err words an error from incusd or its transport for the operator (the CLI's
	// hints); nil leaves it as is.
	Err func(error) error
	// Ask asks the operator to confirm question unless force; a no is an error saying
	// refused.
	Ask func(force bool, question, refused string) error
	// Warn says a warning aloud (the CLI words it and its hint); nil says nothing.
	Warn func(error)
	// Stdin is the verb's input (box exec passes it through; box shell and tmux want
	// a terminal there).
	Stdin io.Reader
}

var _ backend.Backend = Backend{}

// SignalContext is a verb's context as the CLI makes it: Ctrl-C and SIGTERM cancel it
// (operations in flight are cancelled in incusd too).
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Kind is the backend's name.
func (Backend) Kind() string { return "vm" }

func (b Backend) err(err error) error {
	if err == nil || b.Err == nil {
		return err
	}
	return b.Err(err)
}

func (b Backend) note(format string, a ...any) {
	if !b.Quiet {
		fmt.Fprintf(b.Stderr, "box: "+format+"\n", a...)
	}
}

func (b Backend) progress() *progress.Line { return progress.New(b.Stderr, b.Quiet) }

// Resolve is Resolve with the backend's client and error wording.
func (b Backend) Resolve(ctx context.Context, c *incus.Client, name string) (*incus.Instance, error) {
	inst, err := Resolve(ctx, c, name)
	return inst, b.err(err)
}

// open resolves the vm box name for a verb: a context, a client, the instance (the tag
// boundary checked); done releases them.
func (b Backend) open(name string) (context.Context, *incus.Client, *incus.Instance, func(), error) {
	ctx, stop := b.Context()
	c := b.Client()
	done := func() { c.Close(); stop() }
	inst, err := b.Resolve(ctx, c, name)
	if err != nil {
		done()
		return nil, nil, nil, nil, err
	}
	return ctx, c, inst, done, nil
}

// ResolveAgain resolves before's name again after a question, and refuses unless it is
// still the same instance: a verb acts on the box it asked about, not on whatever has
// its name now.
func (b Backend) ResolveAgain(ctx context.Context, c *incus.Client, before *incus.Instance) (*incus.Instance, error) {
	inst, err := b.Resolve(ctx, c, before.Name)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return nil, &GoneError{before.Name}
	}
	if err != nil {
		return nil, err
	}
	if !SameInstance(*before, *inst) {
		return nil, errs.WithHint(fmt.Errorf("%q is no longer the box box asked about (it was replaced meanwhile): nothing was done", before.Name),
			"run the command again to act on the box that has the name now")
	}
	return inst, nil
}

// NeedSnapshot checks that box has the snapshot, naming the ones it has otherwise.
func (b Backend) NeedSnapshot(ctx context.Context, c *incus.Client, box, snap string) error {
	snaps, err := c.Snapshots(ctx, box)
	if err != nil {
		return b.err(err)
	}
	var names []string
	for _, s := range snaps {
		if s.Name == snap {
			return nil
		}
		names = append(names, s.Name)
	}
	return &backend.NoSnapshotError{Box: box, Name: snap, Have: names}
}

// NoIncus: incusd's socket does not exist: the vm backend is not set up here.
func NoIncus(err error) bool { return errors.Is(err, syscall.ENOENT) }

// Failure is how asking incusd failed, for the CLI to word (FailureOf).
type Failure int

const (
	NotTransport Failure = iota // incusd answered (or the error is not about reaching it)
	Unreached                   // no socket, connection refused, or another network error
	Denied                      // the socket refused this user (EACCES)
	Interrupted                 // the verb's context was cancelled (Ctrl-C, SIGTERM)
)

// FailureOf classifies err, in this order: a network error, a missing socket or a refused
// connection is Unreached; then EACCES is Denied; then a cancelled context Interrupted.
func FailureOf(err error) Failure {
	var op *net.OpError
	switch {
	case errors.As(err, &op), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
		return Unreached
	case errors.Is(err, syscall.EACCES):
		return Denied
	case errors.Is(err, context.Canceled):
		return Interrupted
	}
	return NotTransport
}

// Taken reports whether incusd has an instance called name (a box or not). No incusd
// at all (its socket absent) means no vm boxes; any other failure is an error, since a
// clash could not be ruled out.
func (b Backend) Taken(name string) (bool, error) {
	ctx, stop := b.Context()
	defer stop()
	c := b.Client()
	defer c.Close()
	_, _, err := c.Instance(ctx, name)
	switch {
	case err == nil:
		return true, nil
	case incus.IsNotFound(err), NoIncus(err):
		return false, nil
	}
	return false, b.err(err)
}
